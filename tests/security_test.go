package tests

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/isolation"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandHasNoCapabilities(t *testing.T) {
	requireSeccompNotify(t)
	r := cordon(t, "--", "sh", "-c", "grep -E '^Cap(Eff|Prm|Amb)' /proc/self/status; mount -o remount,rw / 2>/dev/null && echo REMOUNTED; true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "CapEff:\t0000000000000000")
	assert.Contains(t, r.stdout, "CapPrm:\t0000000000000000")
	assert.NotContains(t, r.stdout, "REMOUNTED")
}

func TestControlChannelIsUnreachable(t *testing.T) {
	requireSeccompNotify(t)
	// The init (pid 2 in the sandbox) holds cordon's control socket. The
	// command must not be able to reach it through /proc or ptrace.
	python := requireTool(t, "python3")
	script := strings.Join([]string{
		`ls -l /proc/2/fd/ 2>&1 | grep -q 'Permission denied' && echo fds-hidden`,
		`cat /proc/2/environ >/dev/null 2>&1 || echo environ-hidden`,
		`exec 9<>/proc/2/fd/3 2>/dev/null && echo OPENED-CONTROL || echo control-unreachable`,
		python + ` -c 'import ctypes,sys; l=ctypes.CDLL(None); sys.exit(0 if l.ptrace(16,2,0,0)!=0 else 1)' && echo ptrace-refused`,
	}, "; ")
	r := cordon(t, "--", "bash", "-c", script)
	for _, want := range []string{"fds-hidden", "environ-hidden", "control-unreachable", "ptrace-refused"} {
		assert.Contains(t, r.stdout, want, "stderr: %s", r.stderr)
	}
	assert.NotContains(t, r.stdout, "OPENED-CONTROL")
}

func TestDoctorOnThisHost(t *testing.T) {
	requireSeccompNotify(t)
	r := cordon(t, "doctor")
	require.Equal(t, 0, r.code, "doctor must pass where cordon runs:\n%s%s", r.stdout, r.stderr)
	for _, row := range []string{"kernel", "seccomp-notify", "notify-continue", "wait-killable-recv", "fd-sync-wake-up", "notify-listener", "userns", "bwrap", "ptrace", "wsl"} {
		assert.Regexp(t, `(?m)^`+row+`\s+(ok|warn)\s`, r.stdout)
	}
	assert.Contains(t, r.stdout, "cordon can run on this host.")

	js := cordon(t, "doctor", "--json")
	require.Equal(t, 0, js.code, js.stderr)
	assert.Contains(t, js.stdout, `"checks"`)

	// Inside cordon a second notify listener cannot be installed (EBUSY):
	// doctor says so and fails.
	nested := cordon(t, "--", cordonBin, "doctor")
	assert.Equal(t, 1, nested.code, nested.stdout+nested.stderr)
	assert.Regexp(t, `(?m)^notify-listener\s+FAIL\s`, nested.stdout)
	assert.Regexp(t, `(?m)^exec-verification\s+FAIL\s`, nested.stdout, "no notify listener and no ptrace: nothing can supervise")
	assert.Regexp(t, `(?m)^exec-verification\s+ok\s+notify \+ ptrace`, r.stdout)

	// A nested cordon therefore refuses to run rather than run unsupervised:
	// its bwrap cannot create namespaces without capabilities, and without
	// bwrap (auto steps down to landlock, or none) it cannot trace (ptrace
	// is refused in the sandbox).
	inner := cordon(t, "--", cordonBin, "--isolation", "bwrap", "--", "true")
	assert.Equal(t, 125, inner.code, inner.stderr)
	assert.Contains(t, inner.stderr, "cordon: sandbox setup failed: bwrap:")
	inner = cordon(t, "--", cordonBin, "--", "true")
	assert.Equal(t, 125, inner.code, inner.stderr)
	if os.Getuid() == 0 {
		// Run by root, auto does not step down to landlock at all
		// (TestIsolationAutoInContainerSeccomp); named, it gets as far
		// as the supervisor.
		assert.Contains(t, inner.stderr, "run by root the landlock tier cannot protect the host's files")
		inner = cordon(t, "--", cordonBin, "--isolation", "landlock", "--", "true")
		assert.Equal(t, 125, inner.code, inner.stderr)
	} else {
		assert.Contains(t, inner.stderr, "isolation landlock (bubblewrap cannot run here: bwrap:")
	}
	assert.Contains(t, inner.stderr, "cordon: sandbox setup failed: starting the supervisor: cannot attach with ptrace")
	inner = cordon(t, "--", cordonBin, "--isolation", "none", "--", "true")
	assert.Equal(t, 125, inner.code, inner.stderr)
	assert.Contains(t, inner.stderr, "supervising with ptrace only")
	assert.Contains(t, inner.stderr, "cordon: sandbox setup failed: starting the supervisor: cannot attach with ptrace")
}

// A command that stops cordon's init (SIGSTOP: the one signal the init
// cannot handle, sent by a process of the sandbox, which runs as the
// init's user) no longer holds the run open for ever: the init reports
// nothing while stopped, and cordon waited for the command's exit without
// end (a red team's; in every tier). cordon continues it and says so. From
// Landlock ABI 6 the stop itself is refused in every tier but none (the
// command's scope layer: TestIsolationLandlockCommandCannotSignalItsInit),
// so the continuing is tried with --isolation none, and the refusal in the
// suite's tier (run again in the landlock tier by make test).
func TestSecurityStoppedInitIsContinued(t *testing.T) {
	requireSeccompNotify(t)
	const script = `kill -STOP $PPID 2>/dev/null && echo stopped || echo refused; echo after-stop`
	t.Run("none", func(t *testing.T) {
		requireTool(t, "python3")
		r := runCordon(t, runOpts{timeout: 20 * time.Second}, "--isolation", "none", "--", "sh", "-c", script)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "stopped\nafter-stop\n", r.stdout)
		assert.Contains(t, r.stderr, "cordon: warning: cordon's init was stopped (SIGSTOP): continued")
	})
	t.Run("suite's tier", func(t *testing.T) {
		r := runCordon(t, runOpts{timeout: 20 * time.Second}, "--", "sh", "-c", script)
		assert.Equal(t, 0, r.code, r.stderr)
		if isolation.LandlockABI() >= 6 {
			assert.Equal(t, "refused\nafter-stop\n", r.stdout)
			assert.NotContains(t, r.stderr, "init was stopped")
			return
		}
		assert.Equal(t, "stopped\nafter-stop\n", r.stdout)
		assert.Contains(t, r.stderr, "cordon: warning: cordon's init was stopped (SIGSTOP): continued")
	})
}

// A process of the sandbox cannot change another process's resource limits
// (a third red team's): it runs as the user of cordon's init and, without a
// pid namespace, of cordon itself, and RLIMIT_NOFILE 0 on both left them
// unable to read /proc to end the command's tree (a setsid job then outlived
// every bare run), while RLIMIT_CPU killed cordon from inside. prlimit64 is
// refused for any pid but 0; the process's own limits still change. Run again
// in the landlock tier by make test (TestSecurity).
func TestSecurityNoPrlimitOnOtherProcesses(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "python3")
	script := `
import errno, os, resource
def stat_ppid(pid):
    return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
init = os.getppid()
for name, pid in (("init", init), ("above", stat_ppid(init)), ("own_pid", os.getpid())):
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (0, 0))
        print(name + "=changed")
    except OSError as e:
        print(name + "=" + errno.errorcode[e.errno])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))
print("self=%s" % (resource.getrlimit(resource.RLIMIT_NOFILE)[0] == soft - 1))
`
	r := runCordon(t, runOpts{}, "--", "python3", "-c", script)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "init=EPERM")
	assert.Contains(t, r.stdout, "above=EPERM")
	assert.Contains(t, r.stdout, "own_pid=EPERM", "only pid 0 names the caller to the filter")
	assert.Contains(t, r.stdout, "self=True")
}

// pidfdGetfdProbe tries pidfd_getfd (438 on x86-64) on descriptors 0-63 of
// the process named by argv[1] and prints stolen=N or refused=ERRNO.
const pidfdGetfdProbe = `
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
pidfd = os.pidfd_open(pid)
res = "refused=none-open"
for fd in range(64):
    got = libc.syscall(438, pidfd, fd, 0)
    if got >= 0:
        res = "stolen=%d" % fd
        break
    e = ctypes.get_errno()
    if e != errno.EBADF:
        res = "refused=" + errno.errorcode[e]
        break
print(res)
`

// No process of the sandbox can copy another process's descriptors
// (pidfd_getfd is refused in every tier): a red team took, with
// --isolation none, the supervisor's notify listener from cordon itself and
// approved its own execs, and in the bubblewrap tier the eventfd of
// bubblewrap's pid 1, whose write ended the run with an exit code of its
// choosing.
func TestSecurityNoDescriptorCopies(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "python3")
	for _, tc := range []struct{ name, target string }{
		{"suite's tier, the init", "$PPID"},
		{"bwrap, pid 1", "1"},
		{"none, cordon", "$(awk '{print $4}' /proc/$PPID/stat)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{}
			switch {
			case strings.HasPrefix(tc.name, "bwrap"):
				testcap.RequireBwrap(t)
				args = append(args, "--isolation", "bwrap")
			case strings.HasPrefix(tc.name, "none"):
				args = append(args, "--isolation", "none")
			}
			args = append(args, "--", "sh", "-c", `python3 -c "$0" `+tc.target, pidfdGetfdProbe)
			r := runCordon(t, runOpts{timeout: 20 * time.Second}, args...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "refused=EPERM\n", r.stdout)
		})
	}
}
