package runner

import (
	"encoding/json"
	"io"
	"time"

	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

// auditRecord is one line of --audit output.
type auditRecord struct {
	Time      string   `json:"time"`
	Pid       int      `json:"pid"`
	Syscall   string   `json:"syscall"`
	Arch      string   `json:"arch"`
	Path      string   `json:"path"`
	Resolved  string   `json:"resolved"`
	Argv      []string `json:"argv"`
	Decision  string   `json:"decision"`
	Rule      string   `json:"rule"`
	Source    string   `json:"source,omitempty"`
	Errno     int      `json:"errno,omitempty"`
	Error     string   `json:"error,omitempty"`
	LatencyUs int64    `json:"latency_us"`
}

func writeAudit(w io.Writer, d *supervisor.Decision) {
	rec := auditRecord{
		Time:      d.Time.UTC().Format(time.RFC3339Nano),
		Pid:       d.Pid,
		Syscall:   d.Syscall,
		Arch:      d.Arch,
		Path:      d.Exec.Path,
		Resolved:  d.Exec.Resolved,
		Argv:      d.Exec.Argv,
		Decision:  d.Result.Decision.String(),
		Rule:      d.Result.RuleText(),
		Errno:     int(d.Errno),
		LatencyUs: d.Latency.Microseconds(),
	}
	if d.Errno != 0 && !d.Denied() {
		// Refused before the policy was asked: the file does not exist, is
		// not executable, or the call could not have succeeded.
		rec.Decision, rec.Rule, rec.Error = "error", "", unix.ErrnoName(d.Errno)
	}
	if d.Result.Rule != nil {
		rec.Source = d.Result.Rule.Source
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}
