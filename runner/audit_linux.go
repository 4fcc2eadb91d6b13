package runner

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

// auditRecord is one line of --audit output.
type auditRecord struct {
	Kind     string   `json:"kind"`
	Time     string   `json:"time"`
	Pid      int      `json:"pid"`
	Ppid     int      `json:"ppid,omitempty"`
	Cwd      string   `json:"cwd,omitempty"`
	Syscall  string   `json:"syscall"`
	Arch     string   `json:"arch"`
	Path     string   `json:"path"`
	Resolved string   `json:"resolved"`
	Argv     []string `json:"argv"`
	// Loaded names the program a dynamic loader run as the exec's program
	// (ld.so PROG) was decided to open, as a canonical path.
	Loaded []string `json:"loaded,omitempty"`
	// PathB64 and ArgvB64 are the exact bytes of the path and of every
	// argument, base64, when any of them is not valid UTF-8: JSON strings
	// carry text, and Path and Argv show such bytes as U+FFFD, so two
	// different execs would read alike.
	PathB64   string   `json:"path_b64,omitempty"`
	ArgvB64   []string `json:"argv_b64,omitempty"`
	Decision  string   `json:"decision"`
	Rule      string   `json:"rule"`
	RuleID    string   `json:"rule_id,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Errno     int      `json:"errno,omitempty"`
	Error     string   `json:"error,omitempty"`
	LatencyUs int64    `json:"latency_us"`
}

func writeAudit(w io.Writer, d *supervisor.Verdict) {
	rec := auditRecord{
		Kind:      "exec",
		Time:      d.Time.UTC().Format(time.RFC3339Nano),
		Pid:       d.Pid,
		Ppid:      ppid(d.Pid),
		Cwd:       cwd(d.Pid),
		Syscall:   d.Syscall,
		Arch:      d.Arch,
		Path:      d.Exec.Path,
		Resolved:  d.Exec.Resolved,
		Argv:      d.Exec.Argv,
		Loaded:    d.Loaded(),
		Decision:  d.Result.Decision.String(),
		Rule:      d.Result.RuleText(),
		Errno:     int(d.Errno),
		Reason:    d.Reason,
		LatencyUs: d.Latency.Microseconds(),
	}
	if d.Errno != 0 && !d.Refused() {
		// Refused before the policy was asked: the file does not exist, is
		// not executable, or the call could not have succeeded.
		rec.Decision, rec.Rule, rec.Error = "error", "", unix.ErrnoName(d.Errno)
	}
	if d.Result.Rule != nil {
		rec.RuleID = d.Result.Rule.Source
	}
	if !utf8.ValidString(d.Exec.Path) {
		rec.PathB64 = base64.StdEncoding.EncodeToString([]byte(d.Exec.Path))
	}
	if slices.ContainsFunc(d.Exec.Argv, func(a string) bool { return !utf8.ValidString(a) }) {
		rec.ArgvB64 = make([]string, len(d.Exec.Argv))
		for i, a := range d.Exec.Argv {
			rec.ArgvB64[i] = base64.StdEncoding.EncodeToString([]byte(a))
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}

// ppid and cwd describe the caller. The audit record is written while its
// exec waits for the answer, so /proc still shows the caller. Pids are the
// host's (the sandbox has its own pid namespace); cwd is the sandbox's view.
func ppid(pid int) int {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.PPid
}

func cwd(pid int) string {
	p, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	return p
}

// netAuditRecord is one --audit line for a network decision.
type netAuditRecord struct {
	Kind       string   `json:"kind"`
	Time       string   `json:"time"`
	Proto      string   `json:"proto"`
	Host       string   `json:"host"`
	Port       uint16   `json:"port"`
	Addr       string   `json:"addr,omitempty"`
	Decision   string   `json:"decision"`
	Rule       string   `json:"rule"`
	RuleID     string   `json:"rule_id,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Pid        int      `json:"pid,omitempty"`
	Argv       []string `json:"argv,omitempty"`
	BytesUp    int64    `json:"bytes_up"`
	BytesDown  int64    `json:"bytes_down"`
	DurationMs int64    `json:"duration_ms"`
}

func writeNetAudit(w io.Writer, r *netproxy.Record) {
	rec := netAuditRecord{
		Kind:       "net",
		Time:       r.Time.UTC().Format(time.RFC3339Nano),
		Proto:      r.Proto,
		Host:       r.Host,
		Port:       r.Port,
		Addr:       r.Addr,
		Decision:   r.Decision.String(),
		Rule:       r.Result.RuleText(),
		Reason:     r.Reason,
		Pid:        r.Owner.Pid,
		Argv:       r.Owner.Argv,
		BytesUp:    r.BytesUp,
		BytesDown:  r.BytesDown,
		DurationMs: r.Duration.Milliseconds(),
	}
	if r.Result.Rule != nil {
		rec.RuleID = r.Result.Rule.Source
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}

// fileRecord is one "kind":"file" line of --audit output: something the
// files policy did at start (hide, protect, private, writable, created) or
// a creation it refused (deny-create).
type fileRecord struct {
	Time    time.Time `json:"-"`
	Kind    string    `json:"kind"`
	TimeStr string    `json:"time"`
	Action  string    `json:"action"`
	Path    string    `json:"path"`
	Target  string    `json:"target,omitempty"`
	Rule    string    `json:"rule"`
	RuleID  string    `json:"rule_id,omitempty"`
	Pid     int       `json:"pid,omitempty"`
	Syscall string    `json:"syscall,omitempty"`
	Errno   int       `json:"errno,omitempty"`
}

func writeFileAudit(w io.Writer, r fileRecord) {
	r.Kind, r.TimeStr = "file", r.Time.UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}
