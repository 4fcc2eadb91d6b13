package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timeoutReport says where every process of the tree under pid waits, for a
// run of cordon that did not finish in time: each process's state, tracer,
// system call, wait channel and kernel stack, and the same for each of
// cordon's own threads (the tracer thread among them). A hang seen once in
// CI then names the wait that never ended instead of only its timeout.
// Kernel stacks need root; without it that line is empty.
func timeoutReport(pid int) string {
	var b strings.Builder
	seen := map[int]bool{}
	var walk func(p, depth int)
	walk = func(p, depth int) {
		if seen[p] || depth > 32 {
			return
		}
		seen[p] = true
		describeProcess(&b, p, depth)
		for _, c := range proc.Children(p) {
			walk(c, depth+1)
		}
	}
	walk(pid, 0)
	return b.String()
}

// describeProcess writes one process of timeoutReport, and every thread of
// it when it has more than one.
func describeProcess(b *strings.Builder, pid, depth int) {
	dir := "/proc/" + strconv.Itoa(pid)
	cmd, _ := os.ReadFile(dir + "/cmdline")
	args := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	if len(args) > 120 {
		args = args[:120] + "..."
	}
	indent := strings.Repeat("  ", depth)
	fmt.Fprintf(b, "%spid %d: %s\n", indent, pid, args)
	tasks, _ := os.ReadDir(dir + "/task")
	for _, t := range tasks {
		tdir := filepath.Join(dir, "task", t.Name())
		st, err := proc.ReadStatus(mustAtoi(t.Name()))
		state := "?"
		if raw, rerr := os.ReadFile(tdir + "/status"); rerr == nil {
			for _, line := range strings.Split(string(raw), "\n") {
				if v, ok := strings.CutPrefix(line, "State:"); ok {
					state = strings.TrimSpace(v)
				}
			}
		}
		tracer := -1
		if err == nil {
			tracer = st.TracerPid
		}
		wchan, _ := os.ReadFile(tdir + "/wchan")
		sc, _ := os.ReadFile(tdir + "/syscall")
		stack, _ := os.ReadFile(tdir + "/stack")
		var frames []string
		for _, f := range strings.Split(strings.TrimSpace(string(stack)), "\n") {
			if fs := strings.Fields(f); len(fs) >= 2 {
				frames = append(frames, fs[1])
			}
		}
		syscallNr, _, _ := strings.Cut(strings.TrimSpace(string(sc)), " ")
		fmt.Fprintf(b, "%s  tid %s: state %s, tracer %d, syscall %s, wchan %s, stack: %s\n",
			indent, t.Name(), state, tracer, syscallNr, string(wchan), strings.Join(frames, " < "))
	}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestTimeoutReportShowsTheWait: a run that outlives its timeout is
// described before it is ended (every process of its tree with its state,
// and cordon's goroutines from the runtime's SIGABRT dump), so a hang that
// shows up once says where it waited.
func TestTimeoutReportShowsTheWait(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	r, report := runCordonRaw(t, runOpts{dir: dir, timeout: 3 * time.Second}, cordonBin, "--", "sh", "-c", "sleep 3600.123")
	require.NotEmpty(t, report, "no report for a run that did not finish: stdout %q stderr %q", r.stdout, r.stderr)
	assert.Contains(t, report, "sleep 3600.123", "the sleeping command is in the report:\n%s", report)
	assert.Contains(t, report, "state S (sleeping)", "and its state:\n%s", report)
	// The runtime's dump of cordon's goroutines, on its stderr.
	assert.Contains(t, r.stderr, "SIGABRT")
	assert.Contains(t, r.stderr, "goroutine ")
}
