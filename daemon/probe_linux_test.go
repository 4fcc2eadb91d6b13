package daemon

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestDiscoveryIsAtomicAndPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DiscoveryName)
	d := Discovery{Pid: 42, InstanceID: "1a2b3c4d", Port: 4000, Addr: "127.0.0.1:4000", Token: "t"}
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	require.NoError(t, WriteDiscovery(path, d))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "0600 whatever the umask")
	got, err := ReadDiscovery(path)
	require.NoError(t, err)
	assert.Equal(t, d.Token, got.Token)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")

	// A discovery file others can read is not trusted.
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = ReadDiscovery(path)
	assert.ErrorContains(t, err, "not trusted")
	// Nor a symlink.
	require.NoError(t, os.Chmod(path, 0o600))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(path, link))
	_, err = ReadDiscovery(link)
	assert.Error(t, err)
}

func TestProcStartTime(t *testing.T) {
	a, err := procStartTime(os.Getpid())
	require.NoError(t, err)
	assert.NotZero(t, a)
	cmd := exec.Command("sleep", "10")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	b, err := procStartTime(cmd.Process.Pid)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, b, a)
}

// Edge 29: kill(pid, 0) answering EPERM means alive. Edge 28: a pid whose
// start time differs belongs to another process.
func TestPidAlive(t *testing.T) {
	self, err := procStartTime(os.Getpid())
	require.NoError(t, err)
	tests := []struct {
		name  string
		pid   int
		start uint64
		kill  killFunc
		alive bool
	}{
		{"EPERM is alive", 4242, 0, func(int, syscall.Signal) error { return unix.EPERM }, true},
		{"EPERM is alive even with a start time", 4242, 99, func(int, syscall.Signal) error { return unix.EPERM }, true},
		{"ESRCH is dead", 4242, 0, func(int, syscall.Signal) error { return unix.ESRCH }, false},
		{"other errors count as alive", 4242, 0, func(int, syscall.Signal) error { return unix.EINVAL }, true},
		{"no pid", 0, 0, syscall.Kill, false},
		{"a live pid with its start time", os.Getpid(), self, syscall.Kill, true},
		{"a live pid with another start time: reused", os.Getpid(), self + 1, syscall.Kill, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alive, why := pidAlive(tc.pid, tc.start, tc.kill)
			assert.Equal(t, tc.alive, alive, why)
		})
	}
	// One real process check: a child that exited and was reaped is gone.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	alive, why := pidAlive(cmd.Process.Pid, 0, syscall.Kill)
	assert.False(t, alive, why)
}

// The lock decides when health fails; the pid only where the lock cannot
// be checked.
func TestProbeDecisions(t *testing.T) {
	errNoLock := os.NewSyscallError("flock", unix.ENOLCK)
	tests := []struct {
		name     string
		disc     *Discovery
		held     bool
		lockErr  error
		kill     killFunc
		want     State
		stale    bool
		contains string
	}{
		{name: "nothing at all", want: Stopped},
		{name: "stale file, dead pid, lock free (edge 27)", disc: &Discovery{Pid: 4242}, kill: dead, want: Stopped, stale: true},
		{name: "file naming a live unrelated process, lock free (edge 28)", disc: &Discovery{Pid: os.Getpid()}, kill: syscall.Kill, want: Stopped, stale: true},
		{name: "lock held, no answer: starting or hung", disc: &Discovery{Pid: 4242}, held: true, kill: dead, want: Unresponsive},
		{name: "lock unusable, kill says EPERM (edge 29)", disc: &Discovery{Pid: 4242}, lockErr: errNoLock, kill: eperm, want: Unresponsive, contains: "EPERM"},
		{name: "lock unusable, kill says ESRCH", disc: &Discovery{Pid: 4242}, lockErr: errNoLock, kill: dead, want: Stopped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pathsIn(t.TempDir())
			if tc.disc != nil {
				tc.disc.Socket = p.Socket // nobody listens there
				require.NoError(t, WriteDiscovery(p.Discovery, *tc.disc))
			}
			killed := false
			pr := prober{
				kill: func(pid int, sig syscall.Signal) error {
					killed = true
					assert.Equal(t, syscall.Signal(0), sig, "a probe never sends a real signal")
					return tc.kill(pid, sig)
				},
				lockHeld: func(string) (bool, error) { return tc.held, tc.lockErr },
				timeout:  time.Second,
			}
			st := pr.probe(context.Background(), p, nil)
			assert.Equal(t, tc.want, st.State, st.Reason)
			assert.Equal(t, tc.stale, st.Stale)
			if tc.contains != "" {
				assert.Contains(t, st.Reason, tc.contains)
			}
			assert.Equal(t, tc.lockErr != nil && tc.disc != nil, killed, "the pid is consulted only when the lock cannot be")
			if tc.disc != nil {
				_, err := os.Stat(p.Discovery)
				assert.NoError(t, err, "a probe never removes anything")
			}
		})
	}
}

func dead(int, syscall.Signal) error  { return unix.ESRCH }
func eperm(int, syscall.Signal) error { return unix.EPERM }

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), LockName)
	held, err := lockHeld(path)
	require.NoError(t, err)
	assert.False(t, held, "no file: free")
	l, err := TryLock(path)
	require.NoError(t, err)
	held, err = lockHeld(path)
	require.NoError(t, err)
	assert.True(t, held)
	_, err = TryLock(path)
	assert.ErrorIs(t, err, ErrLocked)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = WaitLock(ctx, path)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	l.Unlock()
	held, err = lockHeld(path)
	require.NoError(t, err)
	assert.False(t, held)
}

func TestReadiness(t *testing.T) {
	tests := []struct {
		name  string
		send  func(n *Notifier)
		kind  string
		err   error
		check func(t *testing.T, r readiness)
	}{
		{"ready", func(n *Notifier) { n.Ready(77) }, "ready", nil, func(t *testing.T, r readiness) { assert.Equal(t, 77, r.pid) }},
		{"running", func(n *Notifier) { n.Running(78) }, "running", nil, nil},
		{"error, multi-line flattened", func(n *Notifier) { n.Failed(errors.New("bind: permission\ndenied")) }, "error", nil,
			func(t *testing.T, r readiness) { assert.Equal(t, "bind: permission denied", r.msg) }},
		{"closed without a word", func(n *Notifier) { n.f.Close() }, "", errNoReadiness, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			defer r.Close()
			n := NewNotifier(w)
			tc.send(n)
			n.Ready(1) // a second line is never sent
			got, err := awaitReadiness(r, 5*time.Second)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.kind, got.kind)
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
	t.Run("silence is bounded", func(t *testing.T) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		start := time.Now()
		_, err = awaitReadiness(r, 100*time.Millisecond)
		assert.ErrorContains(t, err, "did not report readiness")
		assert.Less(t, time.Since(start), 2*time.Second)
	})
	var nobody *Notifier
	nobody.Ready(1) // a daemon started by hand has no pipe
}
