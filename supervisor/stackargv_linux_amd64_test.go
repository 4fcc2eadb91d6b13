package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestStackArgvIsCmdline: at the stop that follows a traced exec (no
// instruction of the new image run), the argument strings read from the
// new stack must be byte for byte what /proc/PID/cmdline gives, and the
// layouts stackArgv does not take (no environment, more arguments than its
// first read covers) must send the caller to /proc.
func TestStackArgvIsCmdline(t *testing.T) {
	testcap.RequirePtrace(t)
	// An i386 image (no libc needed): its regset and stack tables are
	// 32-bit, and stackArgv must leave it to /proc.
	i386 := filepath.Join(t.TempDir(), "exit32")
	src := i386 + ".S"
	require.NoError(t, os.WriteFile(src, []byte(".globl _start\n_start:\n movl $1,%eax\n xorl %ebx,%ebx\n int $0x80\n"), 0o644))
	if out, err := exec.Command("cc", "-m32", "-nostdlib", "-static", "-o", i386, src).CombinedOutput(); err != nil {
		testcap.SkipOrFail(t, "cannot build an i386 image with cc -m32: %v: %s", err, out)
	}
	many := []string{"/bin/true"}
	for i := 0; i < 80; i++ {
		many = append(many, "arg"+strconv.Itoa(i))
	}
	for _, tc := range []struct {
		name   string
		path   string
		argv   []string
		env    []string
		wantOK bool
	}{
		{"one", "/bin/true", []string{"/bin/true"}, []string{"A=1"}, true},
		{"empty strings and spaces", "/bin/true", []string{"/bin/true", "", "a b", "", "\xff\n"}, []string{"A=1", "B="}, true},
		{"argv[0] chosen by the caller", "/bin/true", []string{"", "x"}, []string{"A=1"}, true},
		{"no environment", "/bin/true", []string{"/bin/true", "x"}, []string{}, false},
		{"many arguments", "/bin/true", many, []string{"A=1"}, false},
		{"i386 image", i386, []string{"exit32", "a"}, []string{"A=1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.LockOSThread() // ptrace requests come from the tracing thread
			defer runtime.UnlockOSThread()
			cmd := &exec.Cmd{Path: tc.path, Args: tc.argv, Env: tc.env,
				SysProcAttr: &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL}}
			require.NoError(t, cmd.Start())
			pid := cmd.Process.Pid
			t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); _ = cmd.Wait() })
			// Start returns once the exec is under way: wait for its stop.
			var ws unix.WaitStatus
			_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
			require.NoError(t, err)
			require.True(t, ws.Stopped() && ws.StopSignal() == unix.SIGTRAP, "stopped after the exec: %v", ws)
			want, err := proc.ReadFile("/proc/"+strconv.Itoa(pid)+"/cmdline", nil)
			require.NoError(t, err)
			require.Equal(t, strings.Join(tc.argv, "\x00")+"\x00", string(want), "the kernel's cmdline")
			got, ok := stackArgv(pid)
			assert.Equal(t, tc.wantOK, ok)
			if ok {
				assert.Equal(t, string(want), string(got))
			}
			exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
			require.Equal(t, filepath.Base(tc.path), filepath.Base(exe), "stopped after the exec")
		})
	}
}
