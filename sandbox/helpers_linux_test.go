package sandbox

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/stretchr/testify/require"
)

// hostProc is a process of a session seen from the host.
type hostProc struct {
	pid, nsPid int
	cmdline    string
	state      byte
}

// sessionTree lists the live processes below the session's init (shims
// included), from the host's /proc.
func sessionTree(s *Session) []hostProc {
	var out []hostProc
	queue := []int{int(s.initPid.Load())}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range proc.Children(pid) {
			st, err := proc.ReadStat(c)
			if err != nil || st.State == 'Z' {
				continue
			}
			chain := nsChain(c, pid)
			ns := 0
			if len(chain) > 0 {
				ns = chain[0]
			}
			out = append(out, hostProc{pid: c, nsPid: ns, cmdline: cmdline(c), state: st.State})
			queue = append(queue, c)
		}
	}
	return out
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// withMarker returns the host pids of the session's sleep processes whose
// command line contains marker (shells that run them do not count).
func withMarker(s *Session, marker string) []int {
	var out []int
	for _, p := range sessionTree(s) {
		if strings.HasPrefix(p.cmdline, "sleep ") && strings.Contains(p.cmdline, marker) {
			out = append(out, p.pid)
		}
	}
	return out
}

// hostPidOf translates a pid in the session's namespace to the host's.
func hostPidOf(s *Session, nsPid int) int {
	for _, p := range sessionTree(s) {
		if p.nsPid == nsPid {
			return p.pid
		}
	}
	return 0
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := proc.ReadStat(pid)
	return err == nil && st.State != 'Z' && st.State != 'X'
}

// eventually fails the test unless cond holds within d.
func eventually(t testing.TB, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: "+format, append([]any{d}, args...)...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// collect reads a process's events from cursor after to its exit.
func collect(t testing.TB, p *Process, after uint64) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var evs []Event
	for ev, err := range p.Events(ctx, after) {
		require.NoError(t, err)
		evs = append(evs, ev)
	}
	return evs
}

// stdoutOf concatenates the stdout events.
func stdoutOf(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == EventStdout {
			b.Write(ev.Data)
		}
	}
	return b.String()
}

// waitOutput waits until the process has printed want on stdout.
func waitOutput(t testing.TB, p *Process, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	for ev, err := range p.Events(ctx, 0) {
		require.NoError(t, err, "waiting for %q; stdout so far %q", want, out.String())
		if ev.Kind == EventStdout {
			out.Write(ev.Data)
			if strings.Contains(out.String(), want) {
				return
			}
		}
		if ev.Kind == EventExit {
			t.Fatalf("process exited (%+v) before printing %q; stdout %q", ev.Exit, want, out.String())
		}
	}
	t.Fatalf("events ended before %q", want)
}

func start(t testing.TB, s *Session, req StartRequest) *Process {
	t.Helper()
	p, err := s.Start(testCtx(t, 5*time.Second), req)
	require.NoError(t, err)
	return p
}

func execIn(t testing.TB, s *Session, req ExecRequest) ExecResult {
	t.Helper()
	res, err := s.Exec(testCtx(t, 30*time.Second), req)
	require.NoError(t, err)
	return res
}
