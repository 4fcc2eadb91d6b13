package doctor

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKernelRelease(t *testing.T) {
	tests := []struct {
		name    string
		release string
		want    kernelVersion
		wantErr bool
	}{
		{name: "this host style", release: "6.18.44-fc-v445", want: kernelVersion{6, 18, 44}},
		{name: "ubuntu", release: "6.8.0-45-generic", want: kernelVersion{6, 8, 0}},
		{name: "wsl2 four parts", release: "5.15.153.1-microsoft-standard-WSL2", want: kernelVersion{5, 15, 153}},
		{name: "wsl1", release: "4.4.0-19041-Microsoft", want: kernelVersion{4, 4, 0}},
		{name: "no patch", release: "5.10", want: kernelVersion{5, 10, 0}},
		{name: "rc", release: "6.1.0-rc1", want: kernelVersion{6, 1, 0}},
		{name: "minor followed by suffix", release: "6.6-arch1", want: kernelVersion{6, 6, 0}},
		{name: "trailing newline", release: "5.19.0\n", want: kernelVersion{5, 19, 0}},
		{name: "empty", release: "", wantErr: true},
		{name: "major only", release: "6-custom", wantErr: true},
		{name: "garbage", release: "linux", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseKernelRelease(tc.release)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestKernelVersionAtLeast(t *testing.T) {
	tests := []struct {
		v            kernelVersion
		major, minor int
		want         bool
	}{
		{kernelVersion{5, 19, 0}, 5, 19, true},
		{kernelVersion{5, 18, 99}, 5, 19, false},
		{kernelVersion{6, 0, 0}, 5, 19, true},
		{kernelVersion{4, 20, 0}, 5, 0, false},
		{kernelVersion{6, 6, 0}, 6, 6, true},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.v.atLeast(tc.major, tc.minor), "%v >= %d.%d", tc.v, tc.major, tc.minor)
	}
}

func TestKernelCheck(t *testing.T) {
	tests := []struct {
		name           string
		release        string
		want           Status
		mentions       []string
		doesNotMention []string
	}{
		{name: "new", release: "6.18.44-fc-v445", want: StatusOK},
		{name: "exactly 6.6", release: "6.6.0", want: StatusOK},
		{name: "jammy", release: "5.15.0-91-generic", want: StatusWarn,
			mentions: []string{"WAIT_KILLABLE_RECV (5.19)", "FD_SYNC_WAKE_UP (6.6)"}, doesNotMention: []string{"FLAG_CONTINUE"}},
		{name: "6.1 lacks only sync wake up", release: "6.1.0-13-amd64", want: StatusWarn,
			mentions: []string{"FD_SYNC_WAKE_UP (6.6)"}, doesNotMention: []string{"WAIT_KILLABLE_RECV"}},
		{name: "5.4 lacks continue", release: "5.4.0-150-generic", want: StatusWarn,
			mentions: []string{"FLAG_CONTINUE (5.5)", "TSYNC with a listener (5.7)"}},
		{name: "old kernel still only warns, probes decide", release: "4.18.0-553.el8_10.x86_64", want: StatusWarn,
			mentions: []string{"seccomp user notification (5.0)", "probes below"}},
		{name: "unparseable", release: "weird", want: StatusWarn, mentions: []string{"cannot read"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := kernelCheck(tc.release)
			assert.Equal(t, CheckKernel, c.Name)
			assert.Equal(t, tc.want, c.Status)
			for _, m := range tc.mentions {
				assert.Contains(t, c.Detail, m)
			}
			for _, m := range tc.doesNotMention {
				assert.NotContains(t, c.Detail, m)
			}
			if tc.want == StatusOK {
				assert.Empty(t, c.Fix)
			}
		})
	}
}

func TestDetectWSL(t *testing.T) {
	tests := []struct {
		name        string
		osrelease   string
		procVersion string
		want        wslKind
	}{
		{name: "plain linux", osrelease: "6.8.0-45-generic",
			procVersion: "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) (gcc 13.2.0)", want: wslNone},
		{name: "wsl2 current", osrelease: "5.15.153.1-microsoft-standard-WSL2",
			procVersion: "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0)", want: wslV2},
		{name: "wsl2 early", osrelease: "4.19.128-microsoft-standard",
			procVersion: "Linux version 4.19.128-microsoft-standard (oe-user@oe-host)", want: wslV2},
		{name: "wsl2 custom kernel without suffix", osrelease: "6.6.36.3-custom",
			procVersion: "Linux version 6.6.36.3-custom (someone@microsoft.com)", want: wslV2},
		{name: "wsl1", osrelease: "4.4.0-19041-Microsoft",
			procVersion: "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) #1237-Microsoft Sat Sep 11 14:32:00 PST 2021", want: wslV1},
		{name: "wsl1 release only", osrelease: "4.4.0-22621-Microsoft", want: wslV1},
		{name: "empty", want: wslNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, detectWSL(tc.osrelease, tc.procVersion))
		})
	}
}

func TestWSLCheck(t *testing.T) {
	tests := []struct {
		kind     wslKind
		want     Status
		mentions string
	}{
		{wslNone, StatusOK, "not WSL"},
		{wslV1, StatusFail, "WSL1"},
		{wslV2, StatusWarn, "mirrored"},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			c := wslCheck(tc.kind, "4.4.0-19041-Microsoft")
			assert.Equal(t, tc.want, c.Status)
			assert.Contains(t, c.Detail, tc.mentions)
			if tc.want != StatusOK {
				assert.NotEmpty(t, c.Fix)
			}
		})
	}
	assert.Contains(t, wslCheck(wslV1, "").Fix, "wsl --set-version")
}

func TestUsernsBlockers(t *testing.T) {
	tests := []struct {
		name    string
		sysctls usernsSysctls
		fixes   []string // one substring per expected blocker, in order
	}{
		{name: "all absent", sysctls: usernsSysctls{}},
		{name: "all permissive", sysctls: usernsSysctls{UnprivilegedClone: "1", MaxUserNamespaces: "63711", AppArmorRestrict: "0"}},
		{name: "debian patch off", sysctls: usernsSysctls{UnprivilegedClone: "0"},
			fixes: []string{"sudo sysctl -w kernel.unprivileged_userns_clone=1"}},
		{name: "max zero (rhel7 style)", sysctls: usernsSysctls{MaxUserNamespaces: "0\n"},
			fixes: []string{"sudo sysctl -w user.max_user_namespaces="}},
		{name: "ubuntu 24.04 apparmor", sysctls: usernsSysctls{UnprivilegedClone: "1", MaxUserNamespaces: "127431", AppArmorRestrict: "1"},
			fixes: []string{"sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"}},
		{name: "everything off", sysctls: usernsSysctls{UnprivilegedClone: "0", MaxUserNamespaces: "0", AppArmorRestrict: "1"},
			fixes: []string{"unprivileged_userns_clone=1", "max_user_namespaces", "apparmor_restrict_unprivileged_userns=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs := usernsBlockers(tc.sysctls, "/usr/bin/bwrap")
			require.Len(t, bs, len(tc.fixes))
			for i, want := range tc.fixes {
				assert.Contains(t, bs[i].Fix, want)
				assert.NotEmpty(t, bs[i].Problem)
			}
		})
	}

	bs := usernsBlockers(usernsSysctls{AppArmorRestrict: "1"}, "/opt/bin/bwrap")
	require.Len(t, bs, 1)
	assert.Contains(t, bs[0].Fix, "profile bwrap /opt/bin/bwrap flags=(unconfined)", "the AppArmor profile names the bwrap that is used")
	assert.Contains(t, bs[0].Fix, "userns,")
	assert.Contains(t, bs[0].Fix, "apparmor_parser -r /etc/apparmor.d/bwrap")
}

func TestUsernsCheck(t *testing.T) {
	probeErr := errors.New("mount(/, MS_REC|MS_PRIVATE): operation not permitted")
	apparmor := usernsSysctls{AppArmorRestrict: "1"}
	tests := []struct {
		name     string
		facts    usernsFacts
		want     Status
		mentions []string
		fix      string
	}{
		{name: "root, all fine", facts: usernsFacts{Root: true}, want: StatusOK,
			mentions: []string{"running as root", "does not need"}},
		{name: "root, normal users blocked", facts: usernsFacts{Root: true, Sysctls: apparmor}, want: StatusWarn,
			mentions: []string{"running as root", "normal users are blocked", "apparmor"}, fix: "apparmor_restrict_unprivileged_userns=0"},
		{name: "root, probe failed", facts: usernsFacts{Root: true, ProbeErr: probeErr}, want: StatusWarn,
			mentions: []string{"does not need", "operation not permitted"}, fix: "CONFIG_USER_NS"},
		{name: "user, works", facts: usernsFacts{}, want: StatusOK, mentions: []string{"work"}},
		{name: "user, apparmor", facts: usernsFacts{ProbeErr: probeErr, Sysctls: apparmor}, want: StatusFail,
			mentions: []string{"operation not permitted", "kernel.apparmor_restrict_unprivileged_userns=1"}, fix: "userns,"},
		{name: "user, unknown cause", facts: usernsFacts{ProbeErr: probeErr}, want: StatusFail, fix: "CONFIG_USER_NS"},
		{name: "user, setuid bwrap", facts: usernsFacts{ProbeErr: probeErr, BwrapPath: "/usr/bin/bwrap", BwrapSetuid: true}, want: StatusWarn,
			mentions: []string{"setuid root"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := usernsCheck(tc.facts)
			assert.Equal(t, CheckUserNS, c.Name)
			assert.Equal(t, tc.want, c.Status)
			for _, m := range tc.mentions {
				assert.Contains(t, c.Detail, m)
			}
			if tc.fix != "" {
				assert.Contains(t, c.Fix, tc.fix)
			}
			if tc.want == StatusOK {
				assert.Empty(t, c.Fix)
			}
		})
	}
}

func TestPtraceCheck(t *testing.T) {
	seizeErr := errors.New("ptrace(PTRACE_SEIZE): operation not permitted")
	tests := []struct {
		name     string
		facts    ptraceFacts
		want     Status
		mentions []string
	}{
		{name: "no yama", facts: ptraceFacts{}, want: StatusOK, mentions: []string{"no Yama"}},
		{name: "classic", facts: ptraceFacts{YamaScope: "0"}, want: StatusOK},
		{name: "descendants", facts: ptraceFacts{YamaScope: "1\n"}, want: StatusOK, mentions: []string{"descendants"}},
		{name: "admin-only as root", facts: ptraceFacts{YamaScope: "2", Root: true}, want: StatusOK},
		{name: "admin-only as user", facts: ptraceFacts{YamaScope: "2"}, want: StatusWarn, mentions: []string{"strict mode"}},
		{name: "no attach", facts: ptraceFacts{YamaScope: "3", Root: true}, want: StatusWarn, mentions: []string{"strict mode", "=3"}},
		{name: "blocked elsewhere", facts: ptraceFacts{YamaScope: "1", SeizeErr: seizeErr}, want: StatusWarn,
			mentions: []string{"operation not permitted", "strict mode"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ptraceCheck(tc.facts)
			assert.Equal(t, tc.want, c.Status)
			for _, m := range tc.mentions {
				assert.Contains(t, c.Detail, m)
			}
			if tc.want == StatusOK {
				assert.Empty(t, c.Fix)
			} else {
				assert.NotEmpty(t, c.Fix)
			}
		})
	}
	assert.Contains(t, ptraceCheck(ptraceFacts{YamaScope: "3"}).Fix, "reboot")
}

func TestCgroupCheck(t *testing.T) {
	tests := []struct {
		name     string
		facts    cgroupFacts
		want     Status
		mentions string
	}{
		{name: "delegated", facts: cgroupFacts{V2: true, Path: "/user.slice/app.scope", Writable: true}, want: StatusOK, mentions: "/user.slice/app.scope is writable"},
		{name: "read-only", facts: cgroupFacts{V2: true, Path: "/"}, want: StatusOK, mentions: "not writable"},
		{name: "v1", facts: cgroupFacts{}, want: StatusOK, mentions: "cgroup v1"},
		{name: "hybrid", facts: cgroupFacts{Hybrid: true}, want: StatusOK, mentions: "hybrid"},
		{name: "error", facts: cgroupFacts{Err: errors.New("statfs: no such file")}, want: StatusOK, mentions: "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cgroupCheck(tc.facts)
			assert.Equal(t, tc.want, c.Status, "sessions do not need cgroups")
			assert.Contains(t, c.Detail, tc.mentions)
			assert.Contains(t, c.Detail, "subreaper shims", "the row says how trees are tracked")
		})
	}
}

func TestCgroupV2Path(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   string
		wantOK bool
	}{
		{name: "pure v2", in: "0::/user.slice/user-1000.slice/session-2.scope\n", want: "/user.slice/user-1000.slice/session-2.scope", wantOK: true},
		{name: "container root", in: "0::/\n", want: "/", wantOK: true},
		{name: "hybrid", in: "12:pids:/user.slice\n1:name=systemd:/user.slice\n0::/user.slice\n", want: "/user.slice", wantOK: true},
		{name: "v1 only", in: "12:pids:/\n1:name=systemd:/\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cgroupV2Path(tc.in)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestBwrapCheck(t *testing.T) {
	tests := []struct {
		name     string
		facts    bwrapFacts
		want     Status
		mentions []string
		fix      string
	}{
		{name: "works", facts: bwrapFacts{Path: "/usr/bin/bwrap", Version: "0.8.0"}, want: StatusOK, mentions: []string{"/usr/bin/bwrap", "0.8.0"}},
		{name: "missing", facts: bwrapFacts{LookErr: errors.New(`exec: "bwrap": executable file not found in $PATH`)}, want: StatusFail,
			mentions: []string{"not found"}, fix: "sudo apt-get install bubblewrap"},
		{name: "cannot sandbox", facts: bwrapFacts{Path: "/usr/bin/bwrap", SmokeErr: errors.New("exit status 1: bwrap: setting up uid map: Permission denied")},
			want: StatusFail, mentions: []string{"setting up uid map", "version unknown"}, fix: "userns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := bwrapCheck(tc.facts)
			assert.Equal(t, tc.want, c.Status)
			for _, m := range tc.mentions {
				assert.Contains(t, c.Detail, m)
			}
			if tc.fix != "" {
				assert.Contains(t, c.Fix, tc.fix)
			}
		})
	}
	assert.Contains(t, bwrapInstallFix, "dnf install bubblewrap")
	assert.Contains(t, bwrapInstallFix, "pacman -S bubblewrap")
}

func TestParseBwrapVersion(t *testing.T) {
	assert.Equal(t, "0.8.0", parseBwrapVersion("bubblewrap 0.8.0\n"))
	assert.Equal(t, "0.11.0", parseBwrapVersion("bubblewrap 0.11.0"))
	assert.Equal(t, "something else", parseBwrapVersion(" something else\n"))
}

func TestSeccompChecks(t *testing.T) {
	compiled := NotifSizes{Notif: 80, NotifResp: 24, Data: 64}
	good := SeccompFeatures{
		KernelSizes:      compiled,
		UserNotif:        Feature{Supported: true, Detail: "notified"},
		Continue:         Feature{Supported: true, Detail: "continued"},
		TSyncListener:    Feature{Supported: true, Detail: "synced"},
		WaitKillableRecv: Feature{Supported: true, Detail: "killable"},
		FDSyncWakeUp:     Feature{Supported: true, Detail: "sync"},
	}
	names := []string{CheckNotifyListener, CheckSeccompNotify, CheckNotifyContinue, CheckTSyncListener, CheckWaitKillableRecv, CheckFDSyncWakeUp}

	statuses := func(cs []Check) map[string]Status {
		m := map[string]Status{}
		for _, c := range cs {
			m[c.Name] = c.Status
		}
		return m
	}

	t.Run("all good", func(t *testing.T) {
		cs := seccompChecks(good, compiled, "0")
		require.Len(t, cs, len(names))
		for i, c := range cs {
			assert.Equal(t, names[i], c.Name)
			assert.Equal(t, StatusOK, c.Status, c.Name)
			assert.Empty(t, c.Fix, c.Name)
		}
		assert.Contains(t, cs[1].Detail, "notif=80 resp=24 data=64")
	})

	t.Run("old kernel: optional features only warn", func(t *testing.T) {
		sf := good
		sf.WaitKillableRecv = Feature{Detail: "the kernel rejects SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (EINVAL)"}
		sf.FDSyncWakeUp = Feature{Detail: "rejected"}
		got := statuses(seccompChecks(sf, compiled, ""))
		assert.Equal(t, StatusWarn, got[CheckWaitKillableRecv])
		assert.Equal(t, StatusWarn, got[CheckFDSyncWakeUp])
		assert.Equal(t, StatusOK, got[CheckSeccompNotify])
	})

	t.Run("no continue or tsync fails", func(t *testing.T) {
		sf := good
		sf.Continue = Feature{Detail: "EINVAL"}
		sf.TSyncListener = Feature{Detail: "EINVAL"}
		got := statuses(seccompChecks(sf, compiled, ""))
		assert.Equal(t, StatusFail, got[CheckNotifyContinue])
		assert.Equal(t, StatusFail, got[CheckTSyncListener])
	})

	t.Run("listener busy", func(t *testing.T) {
		sf := SeccompFeatures{ListenerBusy: true, UserNotif: Feature{Detail: "EBUSY"}}
		cs := seccompChecks(sf, compiled, "2")
		got := statuses(cs)
		assert.Equal(t, StatusFail, got[CheckNotifyListener])
		assert.Equal(t, StatusFail, got[CheckSeccompNotify])
		assert.Contains(t, cs[0].Detail, "a seccomp notify listener already exists above us (nested cordon, another notify-based tool, WSL2 mirrored networking)")
		assert.Contains(t, cs[0].Detail, "2 seccomp filter(s)")
		assert.Contains(t, cs[0].Fix, "networkingMode=nat")
		for _, c := range cs[1:] {
			assert.Equal(t, "see notify-listener", c.Fix, c.Name)
		}
	})

	t.Run("no user notification", func(t *testing.T) {
		sf := SeccompFeatures{UserNotif: Feature{Detail: "the kernel does not know SECCOMP_RET_USER_NOTIF"}}
		cs := seccompChecks(sf, compiled, "")
		got := statuses(cs)
		assert.Equal(t, StatusWarn, got[CheckNotifyListener])
		assert.Equal(t, StatusFail, got[CheckSeccompNotify])
		assert.Equal(t, StatusFail, got[CheckNotifyContinue])
		assert.Contains(t, cs[1].Detail, "SECCOMP_RET_USER_NOTIF")
	})

	t.Run("kernel structs larger than ours", func(t *testing.T) {
		sf := good
		sf.KernelSizes.Notif = 88
		cs := seccompChecks(sf, compiled, "")
		assert.Equal(t, StatusFail, statuses(cs)[CheckSeccompNotify])
		assert.Contains(t, cs[1].Detail, "notif 88")
	})
}

func TestSigMaskHas(t *testing.T) {
	tests := []struct {
		mask    string
		sig     int
		want    bool
		wantErr bool
	}{
		{mask: "0000000000000000", sig: 23},
		{mask: "0000000000400000", sig: 23, want: true}, // SIGURG is 23: bit 22
		{mask: "0000000000400000", sig: 22},
		{mask: "0000000000000001", sig: 1, want: true},
		{mask: "8000000000000000", sig: 64, want: true},
		{mask: "zz", sig: 1, wantErr: true},
		{mask: "0", sig: 0, wantErr: true},
	}
	for _, tc := range tests {
		got, err := sigMaskHas(tc.mask, tc.sig)
		if tc.wantErr {
			assert.Error(t, err, "%s %d", tc.mask, tc.sig)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s %d", tc.mask, tc.sig)
	}
}

func TestStatusField(t *testing.T) {
	status := "Name:\tdoctor\nSigPnd:\t0000000000400000\nSeccomp:\t2\nSeccomp_filters:\t1\n"
	v, ok := statusField(status, "SigPnd")
	assert.True(t, ok)
	assert.Equal(t, "0000000000400000", v)
	v, ok = statusField(status, "Seccomp_filters")
	assert.True(t, ok)
	assert.Equal(t, "1", v)
	_, ok = statusField(status, "Seccomp_f")
	assert.False(t, ok, "keys match whole")
}

func TestIsIdentityUIDMap(t *testing.T) {
	assert.True(t, isIdentityUIDMap("         0          0 4294967295\n"))
	assert.False(t, isIdentityUIDMap("         0       1000          1\n"))
	assert.False(t, isIdentityUIDMap(""))
}

func TestReport(t *testing.T) {
	checks := []Check{
		{Name: "kernel", Status: StatusOK, Detail: "fine"},
		{Name: "wait-killable-recv", Status: StatusWarn, Detail: "old\nkernel", Fix: "upgrade"},
		{Name: "bwrap", Status: StatusFail, Detail: "missing", Fix: "sudo apt-get install bubblewrap\nor build it"},
	}
	r := newReport(checks, SeccompFeatures{})
	assert.False(t, r.OK, "a FAIL row means cordon cannot run")
	assert.True(t, newReport(checks[:2], SeccompFeatures{}).OK, "warnings do not stop cordon")

	c, ok := r.Find("bwrap")
	require.True(t, ok)
	assert.Equal(t, StatusFail, c.Status)
	_, ok = r.Find("nope")
	assert.False(t, ok)

	var b strings.Builder
	require.NoError(t, r.WriteText(&b))
	out := b.String()
	lines := strings.Split(out, "\n")
	require.GreaterOrEqual(t, len(lines), 4)
	assert.Regexp(t, `^CHECK\s+STATUS\s+DETAIL$`, lines[0])
	// Columns line up: STATUS starts at the same offset on every row.
	col := strings.Index(lines[0], "STATUS")
	for _, l := range lines[1:4] {
		assert.Regexp(t, `^(ok|warn|FAIL)\b`, l[col:], l)
	}
	assert.Contains(t, lines[2], "old kernel", "details stay on their row")
	assert.Contains(t, out, "To fix:")
	assert.NotContains(t, out[strings.Index(out, "To fix:"):], "kernel (ok)", "ok rows have nothing to fix")
	assert.Contains(t, out, "  bwrap (FAIL):\n      sudo apt-get install bubblewrap\n      or build it\n")
	assert.Contains(t, out, "cannot run")

	b.Reset()
	require.NoError(t, newReport(checks[:1], SeccompFeatures{}).WriteText(&b))
	assert.NotContains(t, b.String(), "To fix:")
	assert.Contains(t, b.String(), "cordon can run on this host")

	b.Reset()
	shared := []Check{
		{Name: "notify-listener", Status: StatusFail, Detail: "EBUSY", Fix: "run outside"},
		{Name: "seccomp-notify", Status: StatusFail, Detail: "EBUSY", Fix: "see notify-listener"},
		{Name: "fd-sync-wake-up", Status: StatusWarn, Detail: "EBUSY", Fix: "see notify-listener"},
	}
	require.NoError(t, newReport(shared, SeccompFeatures{}).WriteText(&b))
	assert.Equal(t, 1, strings.Count(b.String(), "see notify-listener"), "a shared fix is listed once")
	assert.Contains(t, b.String(), "  seccomp-notify (FAIL), fd-sync-wake-up (warn):\n      see notify-listener\n")
}

func TestGitBareReposCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      gitFacts
		status Status
		detail string
	}{
		{"no git", gitFacts{Missing: true}, StatusOK, "git is not installed"},
		{"unset", gitFacts{Version: "2.39.5"}, StatusWarn, "safe.bareRepository is unset (all, git's default): git run later"},
		{"all", gitFacts{Version: "2.39.5", Value: "all"}, StatusWarn, "safe.bareRepository is all:"},
		{"explicit", gitFacts{Version: "2.39.5", Value: "explicit"}, StatusOK, "safe.bareRepository is explicit: git takes no bare repository"},
		{"another vendor's version", gitFacts{Version: "2.45.2 (Apple Git-154)", Value: "explicit"}, StatusOK, "is explicit"},
		// git stops at a value it does not know: not what the row says is ok.
		{"not git's spelling", gitFacts{Version: "2.39.5", Value: "Explicit"}, StatusWarn, "safe.bareRepository is Explicit:"},
		{"git without the setting", gitFacts{Version: "2.34.1", Value: "explicit"}, StatusWarn, "git 2.34.1 has no safe.bareRepository (git 2.38 and newer)"},
		{"a version not understood", gitFacts{Version: "unknown", Value: "explicit"}, StatusWarn, `cannot tell git's version from "unknown"`},
		{"unreadable", gitFacts{Version: "2.39.5", Err: errors.New("exit status 3")}, StatusWarn, "cannot read git's safe.bareRepository (exit status 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := gitBareReposCheck(tc.f)
			assert.Equal(t, CheckGitBareRepos, c.Name)
			assert.Equal(t, tc.status, c.Status)
			assert.Contains(t, c.Detail, tc.detail)
			if tc.status == StatusOK {
				assert.Empty(t, c.Fix)
			} else {
				assert.Equal(t, "git config --global safe.bareRepository explicit", c.Fix)
			}
		})
	}
}
