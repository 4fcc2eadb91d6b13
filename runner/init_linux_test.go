package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/isolation"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestLookPath(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), mode))
		return p
	}
	tool := mk("bin1/tool", 0o755)
	mk("bin2/noexec", 0o644)
	mk("bin3/both", 0o644)
	both := mk("bin4/both", 0o755)
	local := mk("work/local", 0o755)
	sub := mk("work/sub/subtool", 0o755)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin5/adir"), 0o755))
	dir := filepath.Join(root, "work")
	path := func(dirs ...string) []string {
		for i, d := range dirs {
			if d != "" && !filepath.IsAbs(d) && !strings.HasPrefix(d, "rel:") {
				dirs[i] = filepath.Join(root, d)
			}
			dirs[i] = strings.TrimPrefix(dirs[i], "rel:")
		}
		return []string{"HOME=/nonexistent", "PATH=" + strings.Join(dirs, ":")}
	}

	tests := []struct {
		name      string
		file      string
		env       []string
		want      string
		wantErrno syscall.Errno
	}{
		{name: "bare name found on PATH", file: "tool", env: path("bin2", "bin1"), want: tool},
		{name: "missing", file: "nosuch", env: path("bin1", "bin2"), wantErrno: unix.ENOENT},
		{name: "present but not executable", file: "noexec", env: path("bin1", "bin2"), wantErrno: unix.EACCES},
		{name: "not executable first, executable later", file: "both", env: path("bin3", "bin4"), want: both},
		{name: "directory with the name is skipped", file: "adir", env: path("bin5"), wantErrno: unix.ENOENT},
		{name: "name with a slash is used as given", file: "./x/y", env: path("bin1"), want: "./x/y"},
		{name: "absolute name is used as given", file: "/no/such/prog", env: path("bin1"), want: "/no/such/prog"},
		{name: "empty PATH element means the working directory", file: "local", env: path("bin1", ""), want: local},
		{name: "leading empty PATH element", file: "local", env: []string{"PATH=:" + filepath.Join(root, "bin1")}, want: local},
		{name: "relative PATH element is relative to the working directory", file: "subtool", env: path("rel:sub"), want: sub},
		{name: "dot PATH element", file: "local", env: path("rel:."), want: local},
		{name: "no PATH uses the default one", file: "sh", env: []string{"HOME=/"}, want: "/usr/local/sbin/sh|/usr/local/bin/sh|/usr/sbin/sh|/usr/bin/sh|/sbin/sh|/bin/sh"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errno := lookPath(tc.file, dir, tc.env)
			assert.Equal(t, tc.wantErrno, errno, "errno %v", errno)
			if strings.Contains(tc.want, "|") {
				assert.Contains(t, strings.Split(tc.want, "|"), got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestExitCodeForErrno(t *testing.T) {
	tests := []struct {
		name  string
		errno syscall.Errno
		want  int
	}{
		{name: "not found", errno: unix.ENOENT, want: 127},
		{name: "not executable", errno: unix.EACCES, want: 126},
		{name: "denied by policy", errno: unix.EPERM, want: 126},
		{name: "bad format", errno: unix.ENOEXEC, want: 126},
		{name: "argument list too long", errno: unix.E2BIG, want: 126},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, exitCodeForErrno(tc.errno))
		})
	}
}

func TestChildren(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	assert.Contains(t, proc.Children(os.Getpid()), cmd.Process.Pid)
	assert.Empty(t, proc.Children(cmd.Process.Pid), "sleep has no children")
	assert.Empty(t, proc.Children(1<<30), "no such pid")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	waited = true
	assert.NotContains(t, proc.Children(os.Getpid()), cmd.Process.Pid)
}

// requireProcChildren skips unless /proc/PID/task/TID/children exists
// (CONFIG_PROC_CHILDREN): without it proc.Children sees nothing and the init
// cannot find what to kill.
func requireProcChildren(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d/children", unix.Gettid())); err != nil {
		testcap.SkipOrFail(t, "/proc/PID/task/TID/children unavailable (CONFIG_PROC_CHILDREN): %v", err)
	}
}

type subreaperReport struct {
	Direct int    `json:"direct"`
	Mid    int    `json:"mid"`
	Deep   int    `json:"deep"`
	Before []int  `json:"before"`
	After  []int  `json:"after"`
	Alive  []int  `json:"alive"`
	Error  string `json:"error,omitempty"`
}

// subreaperChild is the init's situation: a subreaper with a direct child,
// and a double-forked grandchild that has a child of its own. It reports
// what killDescendants left behind.
func subreaperChild() int {
	var r subreaperReport
	defer report(&r)
	fail := func(format string, args ...any) int {
		r.Error = fmt.Sprintf(format, args...)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	dir := os.Getenv("CORDON_TEST_PIDDIR")
	attr := &syscall.ProcAttr{Env: []string{"PATH=/usr/bin:/bin", "D=" + dir}}
	var err error
	r.Direct, err = syscall.ForkExec("/bin/sleep", []string{"sleep", "1000"}, attr)
	if err != nil {
		return fail("starting sleep: %v", err)
	}
	// outer starts mid in the background and exits: mid is re-parented to
	// us; deep stays mid's child until mid dies.
	script := `sh -c 'sleep 1000 & echo $! > "$D/deep"; wait' </dev/null >/dev/null 2>&1 & echo $! > "$D/mid"`
	outer, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script}, attr)
	if err != nil {
		return fail("starting sh: %v", err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(outer, &ws, 0, nil); err != nil {
		return fail("waiting for sh: %v", err)
	}
	readPid := func(name string) int {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			if s := string(b); strings.HasSuffix(s, "\n") {
				n, _ := strconv.Atoi(strings.TrimSpace(s))
				return n
			}
			time.Sleep(5 * time.Millisecond)
		}
		return 0
	}
	if r.Mid, r.Deep = readPid("mid"), readPid("deep"); r.Mid == 0 || r.Deep == 0 {
		return fail("no pid files from the shells")
	}
	r.Before = proc.Children(os.Getpid())
	killDescendants()
	r.After = proc.Children(os.Getpid())
	for _, p := range []int{r.Direct, r.Mid, r.Deep} {
		// kill(pid, 0) succeeds on a zombie too: ESRCH means killed and reaped.
		if unix.Kill(p, 0) != unix.ESRCH {
			r.Alive = append(r.Alive, p)
		}
	}
	return 0
}

func TestKillDescendants(t *testing.T) {
	requireProcChildren(t)
	c := startChild(t, "subreaper", []string{"CORDON_TEST_PIDDIR=" + t.TempDir()})
	var r subreaperReport
	c.NextJSON(30*time.Second, &r)
	t.Cleanup(func() {
		// Whatever survived was re-parented away from the child: end it.
		for _, p := range []int{r.Direct, r.Mid, r.Deep} {
			if p > 0 {
				_ = unix.Kill(p, unix.SIGKILL)
			}
		}
	})
	require.Empty(t, r.Error)
	assert.Contains(t, r.Before, r.Direct, "direct child listed")
	assert.Contains(t, r.Before, r.Mid, "re-parented grandchild listed")
	assert.NotContains(t, r.Before, r.Deep, "deep is still mid's child")
	assert.Empty(t, r.After, "children left after killDescendants")
	assert.Empty(t, r.Alive, "descendants still alive or unreaped (direct %d, mid %d, deep %d)", r.Direct, r.Mid, r.Deep)
}

type killRefusedReport struct {
	Child   int     `json:"child"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// killRefusedChild restricts its threads (each in a Landlock domain of its
// own, as go-landlock does below ABI 8) with signals scoped, starts a child
// from one locked thread and calls killDescendants from another: every kill
// fails with EPERM, and killDescendants must give up, not spin forever.
func killRefusedChild() int {
	var r killRefusedReport
	defer report(&r)
	if err := landlock.MustConfig(landlock.ScopedSet(llsys.ScopeSignal)).RestrictScoped(); err != nil {
		r.Error = err.Error()
		return 1
	}
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "1000"}, &syscall.ProcAttr{})
		r.Child = pid
		started <- err
	}()
	if err := <-started; err != nil {
		r.Error = err.Error()
		return 1
	}
	done := make(chan time.Duration)
	go func() {
		runtime.LockOSThread() // another thread, so another domain
		t0 := time.Now()
		killDescendants()
		done <- time.Since(t0)
	}()
	r.Seconds = (<-done).Seconds()
	return 0
}

func TestKillDescendantsGivesUpOnRefusal(t *testing.T) {
	requireProcChildren(t)
	if isolation.LandlockABI() < 6 {
		testcap.SkipOrFail(t, "Landlock signal scoping needs ABI 6 (Linux 6.12)")
	}
	c := startChild(t, "kill-refused", nil)
	var r killRefusedReport
	c.NextJSON(30*time.Second, &r)
	t.Cleanup(func() {
		if r.Child > 0 {
			_ = unix.Kill(r.Child, unix.SIGKILL)
		}
	})
	require.Empty(t, r.Error)
	assert.NoError(t, unix.Kill(r.Child, 0), "the child was refused, so it lives")
	assert.InDelta(t, 1.0, r.Seconds, 0.9, "gave up after about a second")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(c.Stderr.String(), "cannot kill processes") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // stderr is copied on its own goroutine
	}
	assert.Contains(t, c.Stderr.String(), "ending the command's processes: cannot kill processes")
}

type reapReport struct {
	Exited   bool   `json:"exited"`
	Code     int    `json:"code"`
	Signaled bool   `json:"signaled"`
	Signal   int    `json:"signal"`
	Stops    []int  `json:"stops"`
	Left     []int  `json:"left"`
	Error    string `json:"error,omitempty"`
}

// reapChild runs one reap scenario (reap waits for any child, so it must
// not run in the test process).
func reapChild() int {
	var r reapReport
	defer report(&r)
	attr := &syscall.ProcAttr{Env: []string{"PATH=/usr/bin:/bin"}}
	start := func(script string, env ...string) int {
		a := *attr
		a.Env = append(append([]string(nil), attr.Env...), env...)
		pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script}, &a)
		if err != nil {
			r.Error = err.Error()
		}
		return pid
	}
	var pid int
	switch os.Getenv("CORDON_TEST_REAP") {
	case "exit":
		pid = start("exit 7")
	case "signal":
		pid = start("kill -TERM $$")
	case "stop":
		pid = start("kill -STOP $$; exit 3")
	case "others":
		// The target exits only once the other child is gone, which needs
		// reap to collect it on the way.
		other := start("exit 9")
		pid = start(`while kill -0 "$OTHER" 2>/dev/null; do sleep 0.01; done; exit 4`, "OTHER="+strconv.Itoa(other))
	case "none":
		pid = 1 << 22
	default:
		r.Error = "unknown scenario"
		return 1
	}
	if r.Error != "" {
		return 1
	}
	ws := reap(pid, func(sig unix.Signal) {
		r.Stops = append(r.Stops, int(sig))
		_ = unix.Kill(pid, unix.SIGCONT)
	})
	r.Exited, r.Code = ws.Exited(), ws.ExitStatus()
	r.Signaled, r.Signal = ws.Signaled(), int(ws.Signal())
	r.Left = proc.Children(os.Getpid())
	return 0
}

func TestReap(t *testing.T) {
	tests := []struct {
		scenario  string
		want      reapReport
		needsProc bool
	}{
		{scenario: "exit", want: reapReport{Exited: true, Code: 7}},
		{scenario: "signal", want: reapReport{Signaled: true, Signal: int(unix.SIGTERM), Code: -1}},
		{scenario: "stop", want: reapReport{Exited: true, Code: 3, Stops: []int{int(unix.SIGSTOP)}}},
		{scenario: "others", want: reapReport{Exited: true, Code: 4}, needsProc: true},
		{scenario: "none", want: reapReport{Exited: true, Code: 127}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			if tc.needsProc {
				requireProcChildren(t)
			}
			c := startChild(t, "reap", []string{"CORDON_TEST_REAP=" + tc.scenario})
			var got reapReport
			c.NextJSON(20*time.Second, &got)
			require.Empty(t, got.Error)
			if !tc.want.Signaled {
				got.Signal = 0 // Signal() of an exit status is meaningless
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
