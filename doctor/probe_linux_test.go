package doctor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/seccomp"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestStructLayout(t *testing.T) {
	l := seccomp.CompiledLayout()
	assert.Equal(t, NotifSizes{Notif: 80, NotifResp: 24, Data: 64}, NotifSizes(l.Sizes))
	assert.Equal(t, uintptr(6), l.SizesSize, "struct seccomp_notif_sizes is three __u16")
	assert.Equal(t, uintptr(dataOffNr), l.OffsetNr)
	assert.Equal(t, uintptr(dataOffArch), l.OffsetArch)
	assert.Equal(t, uintptr(8), l.SockFilter)
	assert.Equal(t, uintptr(16), l.SockFprog)
	assert.Equal(t, uintptr(8), l.NotifIDSize)
}

func TestStructSizesMatchKernel(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	got, err := seccomp.GetNotifSizes()
	require.NoError(t, err)
	assert.Equal(t, seccomp.CompiledLayout().Sizes, got, "SECCOMP_GET_NOTIF_SIZES disagrees with the Go mirrors")
}

// runBPF interprets the few classic BPF instructions notifyFilter uses.
func runBPF(t *testing.T, prog []unix.SockFilter, nr int32, arch uint32) uint32 {
	t.Helper()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		switch ins.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch ins.K {
			case dataOffNr:
				acc = uint32(nr)
			case dataOffArch:
				acc = arch
			default:
				t.Fatalf("load of unexpected offset %d", ins.K)
			}
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == ins.K {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return ins.K
		default:
			t.Fatalf("unexpected opcode %#x", ins.Code)
		}
	}
	t.Fatal("program fell off its end")
	return 0
}

func TestNotifyFilter(t *testing.T) {
	tests := []struct {
		name string
		nr   int32
		arch uint32
		want uint32
	}{
		{name: "native getppid is notified", nr: probeNr, arch: auditArch, want: unix.SECCOMP_RET_USER_NOTIF},
		{name: "native other syscall allowed", nr: unix.SYS_GETPID, arch: auditArch, want: unix.SECCOMP_RET_ALLOW},
		{name: "foreign arch allowed", nr: probeNr, arch: unix.AUDIT_ARCH_I386, want: unix.SECCOMP_RET_ALLOW},
	}
	prog := notifyFilter()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, runBPF(t, prog, tc.nr, tc.arch))
		})
	}
}

// TestProbeSeccomp runs the real probe through re-executions of this test
// binary (TestMain plays the child).
func TestProbeSeccomp(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	start := time.Now()
	sf, err := ProbeSeccomp(ctx)
	elapsed := time.Since(start)
	out, _ := json.MarshalIndent(sf, "", "  ")
	t.Logf("probe took %v:\n%s", elapsed, out)

	require.NoError(t, err)
	require.False(t, sf.ListenerBusy, "a notify listener already exists above the test process")
	require.True(t, sf.UserNotif.Supported, sf.UserNotif.Detail)
	require.True(t, sf.Continue.Supported, sf.Continue.Detail)
	assert.True(t, sf.Usable())
	assert.Equal(t, NotifSizes(seccomp.CompiledLayout().Sizes), sf.KernelSizes)
	assert.Less(t, elapsed, DefaultTimeout, "the probe is bounded by its timeout")

	// The optional features are host facts: each must at least say what
	// was seen, so a report row never comes out blank.
	for name, f := range map[string]Feature{
		"tsync": sf.TSyncListener, "wait_killable": sf.WaitKillableRecv, "fd_sync_wake_up": sf.FDSyncWakeUp,
	} {
		assert.NotEmpty(t, f.Detail, name)
	}
}

// TestWaitKillableProbeControl proves the WAIT_KILLABLE_RECV probe can tell
// the difference: without the flag, the same signal must abort a received
// notification, and the probe must say so.
func TestWaitKillableProbeControl(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	out, err := runProbe(t.Context(), DefaultTimeout, testKillableControlMode, nil)
	require.NoError(t, err)
	var f Feature
	require.NoError(t, json.Unmarshal(out, &f))
	t.Logf("without the flag: %+v", f)
	assert.False(t, f.Supported, "a plain listener's notification survived a signal: the probe proves nothing")
	assert.Contains(t, f.Detail, "went stale")
}

func TestProbeChildIsBounded(t *testing.T) {
	start := time.Now()
	_, err := runProbe(t.Context(), 200*time.Millisecond, testHangMode, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, errProbeTimeout)
	assert.Less(t, time.Since(start), time.Second, "a hung probe child is killed at its bound")
}

func TestProbeMainRejectsUnknownMode(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	out, err := exec.CommandContext(t.Context(), exe, ProbeArg, "no-such-probe").CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	assert.Equal(t, 2, exitErr.ExitCode())
	assert.Contains(t, string(out), `unknown probe "no-such-probe"`)
}

func TestUserNSProbeRefusesHostNamespaces(t *testing.T) {
	// Run without new namespaces, the userns probe must not remount the
	// host's / (as root it could).
	_, err := runProbe(t.Context(), DefaultTimeout, modeUserNS, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must run in a new user namespace")
}

func TestUserNSProbe(t *testing.T) {
	err := probeUserNS(t.Context(), DefaultTimeout)
	if err != nil {
		testcap.SkipOrFail(t, "user namespaces unusable here: %v", err)
	}
}

// TestPtraceProbe: where this process may trace a child, the probe must
// say ptrace works.
func TestPtraceProbe(t *testing.T) {
	testcap.RequirePtrace(t)
	require.NoError(t, probePtrace(t.Context(), DefaultTimeout))
}

// TestRunOnHost runs every check on this host: with bwrap and seccomp
// notification present, cordon must be reported runnable.
func TestRunOnHost(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)

	start := time.Now()
	r := Run(t.Context(), Options{})
	elapsed := time.Since(start)
	out, err := json.MarshalIndent(r, "", "  ")
	require.NoError(t, err)
	t.Logf("Run took %v:\n%s", elapsed, out)

	want := []string{CheckWSL, CheckKernel, CheckNotifyListener, CheckSeccompNotify, CheckNotifyContinue,
		CheckTSyncListener, CheckWaitKillableRecv, CheckFDSyncWakeUp, CheckUserNS, CheckBwrap, CheckPtrace, CheckCgroup2, CheckVerification, CheckLandlock, CheckIsolation, CheckGitBareRepos}
	var got []string
	for _, c := range r.Checks {
		got = append(got, c.Name)
		assert.Contains(t, []Status{StatusOK, StatusWarn, StatusFail}, c.Status, c.Name)
		assert.NotEmpty(t, c.Detail, c.Name)
		if c.Status != StatusOK {
			assert.NotEmpty(t, c.Fix, "%s is %s but says nothing about a fix", c.Name, c.Status)
		}
	}
	assert.Equal(t, want, got)

	for _, name := range []string{CheckSeccompNotify, CheckNotifyContinue, CheckBwrap} {
		c, ok := r.Find(name)
		require.True(t, ok)
		assert.Equal(t, StatusOK, c.Status, "%s: %s", name, c.Detail)
	}
	assert.True(t, r.OK, "bwrap and seccomp notify work here, so cordon can run")
	assert.Less(t, elapsed, 2*DefaultTimeout, "Run is bounded")

	var back Report
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Equal(t, r, back, "the JSON report round-trips")
}

func TestRunReportsMissingBwrap(t *testing.T) {
	r := Run(t.Context(), Options{Bwrap: "/nonexistent/bwrap", Timeout: time.Second})
	c, ok := r.Find(CheckBwrap)
	require.True(t, ok)
	assert.Equal(t, StatusFail, c.Status)
	assert.Contains(t, c.Fix, "apt-get install bubblewrap")
	assert.False(t, r.OK, "without bwrap cordon cannot run")
}

// probeGit reads the setting as the user's git does: every file git reads
// in git's order (system, XDG, ~/.gitconfig; includes followed), located by
// the environment given and nothing else of it, only the scopes git
// honours for this setting.
func TestProbeGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	ctx := context.Background()
	write := func(p, body string) string {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	home, xdg := t.TempDir(), t.TempDir()
	explicit, all := "[safe]\n\tbareRepository = explicit\n", "[safe]\n\tbareRepository = all\n"
	system := write(filepath.Join(t.TempDir(), "gitconfig"), explicit)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + xdg, "GIT_CONFIG_SYSTEM=/dev/null"}
	probe := func(env ...string) gitFacts {
		f := probeGit(ctx, 5*time.Second, env)
		require.NoError(t, f.Err)
		assert.NotEmpty(t, f.Version)
		return f
	}
	assert.Empty(t, probe(env...).Value, "set nowhere")

	inc := write(filepath.Join(home, "safe.inc"), explicit)
	write(filepath.Join(home, ".gitconfig"), "[include]\n\tpath = "+inc+"\n")
	assert.Equal(t, "explicit", probe(env...).Value, "set through an include")
	assert.Equal(t, "all", probe(append(env, "GIT_CONFIG_GLOBAL="+write(filepath.Join(t.TempDir(), "cfg"), all))...).Value,
		"GIT_CONFIG_GLOBAL decides, as for the user's git")

	// git reads the XDG file before ~/.gitconfig, and both: the XDG file's
	// value stands over the system's when ~/.gitconfig says nothing (git
	// config --global alone reads only ~/.gitconfig when it exists).
	write(filepath.Join(home, ".gitconfig"), "[user]\n\tname = x\n")
	write(filepath.Join(xdg, "git", "config"), all)
	sysEnv := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + xdg, "GIT_CONFIG_SYSTEM=" + system}
	assert.Equal(t, "all", probe(sysEnv...).Value, "the XDG file over the system's")
	require.NoError(t, os.Remove(filepath.Join(xdg, "git", "config")))
	assert.Equal(t, "explicit", probe(sysEnv...).Value, "the system's")
	assert.Empty(t, probe(append(sysEnv, "GIT_CONFIG_NOSYSTEM=1")...).Value, "GIT_CONFIG_NOSYSTEM: the system's is not read")
	assert.Equal(t, "explicit", probe("GIT_CONFIG_SYSTEM="+system).Value, "no HOME: git reads no global file, and that is no error")
	assert.Equal(t, "all", probe(append(sysEnv, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.bareRepository", "GIT_CONFIG_VALUE_0=all")...).Value,
		"settings given in the environment count, as for the user's git")

	write(filepath.Join(home, ".gitconfig"), "[safe\n")
	f := probeGit(ctx, 5*time.Second, sysEnv)
	assert.Error(t, f.Err, "a configuration git cannot read is said, not taken for unset")
}
