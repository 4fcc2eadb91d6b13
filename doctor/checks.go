package doctor

import (
	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/internal/isolation"

	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file turns facts into checks. Nothing here touches the host, so every
// verdict and fix can be tested from strings.

// kernelVersion is the numeric prefix of a kernel release.
type kernelVersion struct {
	Major, Minor, Patch int
}

func (v kernelVersion) atLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// parseKernelRelease reads the leading "MAJOR.MINOR[.PATCH]" of a uname
// release such as "6.8.0-45-generic" or "5.15.153.1-microsoft-standard-WSL2".
func parseKernelRelease(release string) (kernelVersion, error) {
	var nums []int
	rest := strings.TrimSpace(release)
	for len(nums) < 3 {
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		if end == 0 {
			break
		}
		n, err := strconv.Atoi(rest[:end])
		if err != nil {
			return kernelVersion{}, fmt.Errorf("parsing kernel release %q: %w", release, err)
		}
		nums = append(nums, n)
		rest = rest[end:]
		if !strings.HasPrefix(rest, ".") {
			break
		}
		rest = rest[1:]
	}
	if len(nums) < 2 {
		return kernelVersion{}, fmt.Errorf("parsing kernel release %q: no MAJOR.MINOR prefix", release)
	}
	v := kernelVersion{Major: nums[0], Minor: nums[1]}
	if len(nums) == 3 {
		v.Patch = nums[2]
	}
	return v, nil
}

// kernelFeatures are the seccomp features cordon uses, with the upstream
// release that introduced each.
var kernelFeatures = []struct {
	major, minor int
	name         string
}{
	{5, 0, "seccomp user notification"},
	{5, 5, "FLAG_CONTINUE"},
	{5, 7, "TSYNC with a listener"},
	{5, 8, "listener POLLHUP"},
	{5, 19, "WAIT_KILLABLE_RECV"},
	{6, 6, "FD_SYNC_WAKE_UP"},
}

// kernelCheck compares a release with the feature minimums. It never fails:
// distributions backport, so the behavioural probes have the last word.
func kernelCheck(release string) Check {
	c := Check{Name: CheckKernel}
	v, err := parseKernelRelease(release)
	if err != nil {
		c.Status = StatusWarn
		c.Detail = fmt.Sprintf("cannot read the version of kernel %q; the probes below decide", release)
		return c
	}
	var missing []string
	for _, f := range kernelFeatures {
		if !v.atLeast(f.major, f.minor) {
			missing = append(missing, fmt.Sprintf("%s (%d.%d)", f.name, f.major, f.minor))
		}
	}
	if len(missing) == 0 {
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("%s: 6.6 or newer, has every seccomp feature cordon uses", release)
		return c
	}
	c.Status = StatusWarn
	c.Detail = fmt.Sprintf("%s predates %s; the probes below show what this kernel really does (distributions backport)",
		release, strings.Join(missing, ", "))
	c.Fix = "install a 6.6 or newer kernel from your distribution (Ubuntu: the HWE kernel; Debian: backports) and reboot"
	return c
}

// wslKind tells WSL1 (a syscall translation layer, no Linux kernel) from WSL2
// (a real Linux kernel in a VM).
type wslKind int

const (
	wslNone wslKind = iota
	wslV1
	wslV2
)

func (k wslKind) String() string {
	switch k {
	case wslV1:
		return "WSL1"
	case wslV2:
		return "WSL2"
	default:
		return "not WSL"
	}
}

// detectWSL reads /proc/sys/kernel/osrelease and /proc/version. WSL2 kernels
// are "...-microsoft-standard-WSL2" (older: "...-microsoft-standard");
// WSL1 reports a fake "4.4.0-NNNNN-Microsoft" release.
func detectWSL(osrelease, procVersion string) wslKind {
	all := strings.ToLower(osrelease + " " + procVersion)
	if !strings.Contains(all, "microsoft") && !strings.Contains(all, "wsl") {
		return wslNone
	}
	if strings.Contains(all, "wsl2") || strings.Contains(all, "microsoft-standard") {
		return wslV2
	}
	// WSL1 spells it "Microsoft" with a capital M in the release; custom WSL2
	// kernels that dropped the suffix still say "microsoft" in lower case.
	if strings.Contains(osrelease, "Microsoft") {
		return wslV1
	}
	return wslV2
}

func wslCheck(kind wslKind, osrelease string) Check {
	c := Check{Name: CheckWSL}
	switch kind {
	case wslV1:
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("WSL1 (kernel %q) translates Linux syscalls without a Linux kernel: it has no seccomp user notification and cannot run bwrap", strings.TrimSpace(osrelease))
		c.Fix = "convert the distribution to WSL2 from Windows PowerShell: wsl --set-version <distro> 2"
	case wslV2:
		c.Status = StatusWarn
		c.Detail = "WSL2: works, but with networkingMode=mirrored WSL's own init holds the seccomp notify listener and cordon's fails with EBUSY (see notify-listener)"
		c.Fix = "if notify-listener fails: set networkingMode=nat under [wsl2] in %UserProfile%\\.wslconfig, then run wsl --shutdown"
	default:
		c.Status = StatusOK
		c.Detail = "not WSL"
	}
	return c
}

// usernsSysctls are the knobs that gate unprivileged user namespaces. An
// empty value means the sysctl does not exist on this kernel.
type usernsSysctls struct {
	UnprivilegedClone string // kernel.unprivileged_userns_clone (Debian/Ubuntu patch)
	MaxUserNamespaces string // user.max_user_namespaces
	AppArmorRestrict  string // kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10+)
}

// usernsBlocker is one sysctl setting that stops unprivileged user namespaces.
type usernsBlocker struct {
	Problem string
	Fix     string
}

// usernsBlockers lists what in s stops an unprivileged user from creating a
// user namespace bwrap can use, with the fix for each.
func usernsBlockers(s usernsSysctls, bwrapPath string) []usernsBlocker {
	if bwrapPath == "" {
		bwrapPath = "/usr/bin/bwrap"
	}
	var bs []usernsBlocker
	if strings.TrimSpace(s.UnprivilegedClone) == "0" {
		bs = append(bs, usernsBlocker{
			Problem: "kernel.unprivileged_userns_clone=0 forbids unprivileged user namespaces",
			Fix: "sudo sysctl -w kernel.unprivileged_userns_clone=1\n" +
				"(persist: echo kernel.unprivileged_userns_clone=1 | sudo tee /etc/sysctl.d/90-userns.conf)",
		})
	}
	if strings.TrimSpace(s.MaxUserNamespaces) == "0" {
		bs = append(bs, usernsBlocker{
			Problem: "user.max_user_namespaces=0 allows no user namespaces",
			Fix: "sudo sysctl -w user.max_user_namespaces=15000\n" +
				"(persist: echo user.max_user_namespaces=15000 | sudo tee /etc/sysctl.d/90-userns.conf)",
		})
	}
	if strings.TrimSpace(s.AppArmorRestrict) == "1" {
		bs = append(bs, usernsBlocker{
			Problem: "kernel.apparmor_restrict_unprivileged_userns=1 (Ubuntu 23.10+): AppArmor drops the capabilities of user namespaces made by unconfined programs, so bwrap cannot mount",
			Fix: "allow bwrap alone with an AppArmor profile:\n" +
				"  printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile bwrap " + bwrapPath + " flags=(unconfined) {\\n  userns,\\n}\\n' | sudo tee /etc/apparmor.d/bwrap\n" +
				"  sudo apparmor_parser -r /etc/apparmor.d/bwrap\n" +
				"or lift the restriction for every program: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
		})
	}
	return bs
}

// usernsFacts is what Run found out about user namespaces.
type usernsFacts struct {
	Root        bool
	ProbeErr    error // nil when a user namespace was created and mounted in
	Sysctls     usernsSysctls
	BwrapPath   string
	BwrapSetuid bool
}

func usernsCheck(f usernsFacts) Check {
	c := Check{Name: CheckUserNS}
	blockers := usernsBlockers(f.Sysctls, f.BwrapPath)
	var problems, fixes []string
	for _, b := range blockers {
		problems = append(problems, b.Problem)
		fixes = append(fixes, b.Fix)
	}
	fix := strings.Join(fixes, "\n")

	if f.Root {
		switch {
		case f.ProbeErr == nil && len(blockers) == 0:
			c.Status = StatusOK
			c.Detail = "running as root: bwrap does not need unprivileged user namespaces (they work here for normal users too)"
		case f.ProbeErr == nil:
			c.Status = StatusWarn
			c.Detail = "running as root: bwrap does not need user namespaces; normal users are blocked: " + strings.Join(problems, "; ")
			c.Fix = fix
		default:
			c.Status = StatusWarn
			c.Detail = fmt.Sprintf("running as root: bwrap does not need user namespaces, but creating one failed (%v), so normal users cannot run cordon here", f.ProbeErr)
			if len(problems) > 0 {
				c.Detail += ": " + strings.Join(problems, "; ")
			}
			c.Fix = fix
			if c.Fix == "" {
				c.Fix = "check the kernel's user namespace support (CONFIG_USER_NS) and any LSM or container policy that blocks clone(CLONE_NEWUSER)"
			}
		}
		return c
	}

	if f.ProbeErr == nil {
		c.Status = StatusOK
		c.Detail = "unprivileged user namespaces work (created one and mounted inside it)"
		return c
	}
	c.Detail = fmt.Sprintf("cannot create a usable user namespace: %v", f.ProbeErr)
	if len(problems) > 0 {
		c.Detail += "; " + strings.Join(problems, "; ")
	}
	c.Fix = fix
	if c.Fix == "" {
		c.Fix = "check the kernel's user namespace support (CONFIG_USER_NS) and any LSM or container policy that blocks clone(CLONE_NEWUSER)"
	}
	if f.BwrapSetuid {
		c.Status = StatusWarn
		c.Detail += fmt.Sprintf(" (%s is setuid root, so bwrap does not need them)", f.BwrapPath)
		return c
	}
	c.Status = StatusFail
	return c
}

// ptraceFacts is what Run found out about ptrace.
type ptraceFacts struct {
	Root bool
	// YamaScope is /proc/sys/kernel/yama/ptrace_scope; "" when Yama is absent.
	YamaScope string
	// SeizeErr is the result of PTRACE_SEIZE on a child of ours.
	SeizeErr error
}

const strictModeNote = "cordon will use strict mode: without ptrace it cannot re-check an exec after letting it continue, so it only continues callers that cannot race it"

func ptraceCheck(f ptraceFacts) Check {
	c := Check{Name: CheckPtrace}
	scope := strings.TrimSpace(f.YamaScope)
	var yama string
	switch scope {
	case "":
		yama = "no Yama LSM"
	case "0":
		yama = "Yama ptrace_scope=0 (classic)"
	case "1":
		yama = "Yama ptrace_scope=1 (descendants only: the sandbox descends from cordon)"
	case "2":
		yama = "Yama ptrace_scope=2 (CAP_SYS_PTRACE only)"
	case "3":
		yama = "Yama ptrace_scope=3 (no attach at all, until reboot)"
	default:
		yama = fmt.Sprintf("Yama ptrace_scope=%q (unknown value)", scope)
	}

	switch {
	case scope == "3":
		c.Status = StatusWarn
		c.Detail = yama + ": " + strictModeNote
		c.Fix = "ptrace_scope 3 cannot be lowered at run time: set kernel.yama.ptrace_scope=1 in /etc/sysctl.d/10-ptrace.conf and reboot"
	case scope == "2" && !f.Root:
		c.Status = StatusWarn
		c.Detail = yama + ": " + strictModeNote
		c.Fix = "sudo sysctl -w kernel.yama.ptrace_scope=1 (or run cordon as root)"
	case f.SeizeErr != nil:
		c.Status = StatusWarn
		c.Detail = fmt.Sprintf("%s, but PTRACE_SEIZE of a child failed (%v): %s", yama, f.SeizeErr, strictModeNote)
		c.Fix = "something other than Yama blocks ptrace (a container's seccomp profile, a missing CAP_SYS_PTRACE, an LSM): allow ptrace(2) for cordon, e.g. docker run --cap-add SYS_PTRACE"
	default:
		c.Status = StatusOK
		c.Detail = yama + "; attached to a child with PTRACE_SEIZE: exec verification can use ptrace"
	}
	return c
}

// cgroupFacts is what Run found out about cgroups.
type cgroupFacts struct {
	V2       bool
	Hybrid   bool   // v1 controllers, cgroup2 only at /sys/fs/cgroup/unified
	Path     string // our cgroup, from /proc/self/cgroup ("0::/path")
	Writable bool   // we can create child cgroups and move processes
	Err      error
}

// cgroupCheck is informational. Sessions do not need cgroups: every
// process runs under a subreaper shim, so its tree cannot leave it, and a
// tree kill walks /proc from the shim and signals through pidfds. The row
// says so, with what a cgroup.kill-based kill would have to work with.
func cgroupCheck(f cgroupFacts) Check {
	const trees = "process trees are tracked by subreaper shims and killed by walking /proc (no cgroup needed)"
	c := Check{Name: CheckCgroup2, Status: StatusOK}
	switch {
	case f.Err != nil:
		c.Detail = fmt.Sprintf("cannot inspect cgroups (%v); %s", f.Err, trees)
	case !f.V2 && f.Hybrid:
		c.Detail = "hybrid hierarchy (v1 controllers; cgroup2 only at /sys/fs/cgroup/unified); " + trees
	case !f.V2:
		c.Detail = "/sys/fs/cgroup is not a cgroup2 mount (cgroup v1); " + trees
	case !f.Writable:
		c.Detail = fmt.Sprintf("cgroup2, our cgroup %s is not writable (not delegated); %s", f.Path, trees)
	default:
		c.Detail = fmt.Sprintf("cgroup2; our cgroup %s is writable (delegated); %s", f.Path, trees)
	}
	return c
}

// ebusyDetail is how doctor explains EBUSY from SECCOMP_FILTER_FLAG_NEW_LISTENER.
const ebusyDetail = "a seccomp notify listener already exists above us (nested cordon, another notify-based tool, WSL2 mirrored networking)"

// seccompChecks turns probe results into rows. compiled holds the struct sizes
// this binary was built with; filters is the Seccomp_filters count of
// /proc/self/status ("" if unknown).
func seccompChecks(sf SeccompFeatures, compiled NotifSizes, filters string) []Check {
	var checks []Check

	listener := Check{Name: CheckNotifyListener}
	switch {
	case sf.ListenerBusy:
		listener.Status = StatusFail
		listener.Detail = "EBUSY: " + ebusyDetail
		listener.Fix = "run cordon outside the other tool or sandbox (cordon does not nest); under WSL2 set networkingMode=nat in %UserProfile%\\.wslconfig and run wsl --shutdown"
	case sf.UserNotif.Supported:
		listener.Status = StatusOK
		listener.Detail = "no listener above us: cordon can install its own"
	default:
		listener.Status = StatusWarn
		listener.Detail = "unknown: no listener could be created (see seccomp-notify)"
	}
	if f := strings.TrimSpace(filters); f != "" && f != "0" {
		listener.Detail += fmt.Sprintf("; this process already runs under %s seccomp filter(s)", f)
	}
	checks = append(checks, listener)

	notify := Check{Name: CheckSeccompNotify}
	ks := sf.KernelSizes
	switch {
	case sf.ListenerBusy:
		notify.Status = StatusFail
		notify.Detail = "cannot create a listener: EBUSY"
		notify.Fix = "see notify-listener"
	case !sf.UserNotif.Supported:
		notify.Status = StatusFail
		notify.Detail = sf.UserNotif.Detail
		notify.Fix = "needs Linux 5.0+ built with CONFIG_SECCOMP_FILTER; inside a container, the runtime's seccomp profile must allow seccomp(2) and ioctl on the listener"
	case ks.Notif > compiled.Notif || ks.NotifResp > compiled.NotifResp || ks.Data > compiled.Data:
		notify.Status = StatusFail
		notify.Detail = fmt.Sprintf("the kernel's seccomp structs (notif %d, resp %d, data %d bytes) are larger than cordon's (%d, %d, %d)",
			ks.Notif, ks.NotifResp, ks.Data, compiled.Notif, compiled.NotifResp, compiled.Data)
		notify.Fix = "upgrade cordon: it was built for older seccomp structures"
	default:
		notify.Status = StatusOK
		notify.Detail = sf.UserNotif.Detail
		if ks != (NotifSizes{}) {
			notify.Detail += fmt.Sprintf("; struct sizes notif=%d resp=%d data=%d", ks.Notif, ks.NotifResp, ks.Data)
		}
	}
	checks = append(checks, notify)

	checks = append(checks,
		featureCheck(CheckNotifyContinue, sf.Continue, StatusFail,
			"needs Linux 5.5 or newer (SECCOMP_USER_NOTIF_FLAG_CONTINUE): cordon lets allowed execs continue"),
		featureCheck(CheckTSyncListener, sf.TSyncListener, StatusFail,
			"needs Linux 5.7 or newer (TSYNC_ESRCH): cordon's in-sandbox init installs its filter on every thread"),
		featureCheck(CheckWaitKillableRecv, sf.WaitKillableRecv, StatusWarn,
			"Linux 5.19 or newer; without it a signal (Go's preemption signal among them) aborts a notification under decision and the exec is retried with a new id: cordon copes, at some cost"),
		featureCheck(CheckFDSyncWakeUp, sf.FDSyncWakeUp, StatusWarn,
			"Linux 6.6 or newer; without it each exec check costs an extra scheduler round trip"),
	)
	if sf.ListenerBusy {
		for i := range checks[2:] {
			c := &checks[2+i]
			if c.Status != StatusOK {
				c.Detail = "not probed: EBUSY (see notify-listener)"
				c.Fix = "see notify-listener"
			}
		}
	}
	return checks
}

// featureCheck is the row of one probed feature; missing is the status when
// the feature is absent or misbehaves.
func featureCheck(name string, f Feature, missing Status, fix string) Check {
	if f.Supported {
		return Check{Name: name, Status: StatusOK, Detail: f.Detail}
	}
	detail := f.Detail
	if detail == "" {
		detail = "not probed"
	}
	return Check{Name: name, Status: missing, Detail: detail, Fix: fix}
}

// statusField returns the value of "Key:\tvalue" in a /proc/PID/status file.
func statusField(status, key string) (string, bool) {
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// sigMaskHas reports whether a hex signal mask from /proc/PID/status
// ("SigPnd:\t0000000000400000") contains signal sig (bit sig-1).
func sigMaskHas(hexMask string, sig int) (bool, error) {
	if sig < 1 || sig > 64 {
		return false, fmt.Errorf("signal %d out of range", sig)
	}
	m, err := strconv.ParseUint(strings.TrimSpace(hexMask), 16, 64)
	if err != nil {
		return false, fmt.Errorf("parsing signal mask %q: %w", hexMask, err)
	}
	return m&(1<<(sig-1)) != 0, nil
}

// errProbeTimeout marks a probe that did not finish within its bound.
var errProbeTimeout = errors.New("probe timed out")

// bwrapFacts is what Run found out about bubblewrap.
type bwrapFacts struct {
	Path     string
	LookErr  error // bwrap not found
	Version  string
	Setuid   bool
	SmokeErr error // the smoke run's failure, with bwrap's stderr
}

const bwrapInstallFix = "sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap (Fedora), sudo pacman -S bubblewrap (Arch)"

func bwrapCheck(f bwrapFacts) Check {
	c := Check{Name: CheckBwrap}
	switch {
	case f.LookErr != nil:
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("bubblewrap not found: %v", f.LookErr)
		if errors.Is(f.LookErr, bwrap.ErrUntrusted) {
			c.Detail = f.LookErr.Error()
		}
		c.Fix = bwrapInstallFix
	case f.SmokeErr != nil:
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("%s (%s) cannot start a sandbox: %v", f.Path, versionOrUnknown(f.Version), f.SmokeErr)
		c.Fix = "see the userns row if it is not ok; otherwise reinstall bubblewrap: " + bwrapInstallFix
	default:
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("%s (%s) ran true in a sandbox (read-only root, new /dev and /proc, own pid namespace)", f.Path, versionOrUnknown(f.Version))
		if f.Setuid {
			c.Detail += "; setuid root"
		}
	}
	return c
}

func versionOrUnknown(v string) string {
	if v == "" {
		return "version unknown"
	}
	return v
}

// parseBwrapVersion reads "bubblewrap 0.8.0" as printed by bwrap --version.
func parseBwrapVersion(out string) string {
	fields := strings.Fields(out)
	if len(fields) >= 2 && fields[0] == "bubblewrap" {
		return fields[1]
	}
	return strings.TrimSpace(out)
}

// cgroupV2Path returns our cgroup from /proc/self/cgroup: the path of the
// "0::" line, which is the only line on a pure cgroup v2 host.
func cgroupV2Path(procSelfCgroup string) (string, bool) {
	for _, line := range strings.Split(procSelfCgroup, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return strings.TrimSpace(p), true
		}
	}
	return "", false
}

// isIdentityUIDMap reports whether a /proc/PID/uid_map is the initial user
// namespace's: every id mapped to itself.
func isIdentityUIDMap(uidMap string) bool {
	return strings.Join(strings.Fields(uidMap), " ") == "0 0 4294967295"
}

// verificationChecks adds the exec-verification row (which of cordon's
// modes a run on this host will use) and, where the notify listener is
// taken but ptrace works, turns the listener rows from FAIL into warnings:
// cordon then supervises with ptrace only.
func verificationChecks(checks []Check, sf SeccompFeatures) []Check {
	ptraceOK := false
	for _, c := range checks {
		if c.Name == CheckPtrace {
			ptraceOK = c.Status == StatusOK
		}
	}
	v := Check{Name: CheckVerification}
	switch {
	case sf.ListenerBusy && ptraceOK:
		v.Status = StatusWarn
		v.Detail = "ptrace-only: the notify listener is taken, so every exec is decided at PTRACE_EVENT_EXEC and a denied program is killed when it starts (its caller sees SIGKILL, not EPERM)"
		v.Fix = "see notify-listener"
		for i := range checks {
			if checks[i].Status == StatusFail && (checks[i].Name == CheckNotifyListener || checks[i].Name == CheckSeccompNotify ||
				checks[i].Name == CheckNotifyContinue || checks[i].Name == CheckTSyncListener) {
				checks[i].Status = StatusWarn
				checks[i].Detail += "; cordon falls back to ptrace-only supervision"
			}
		}
	case sf.ListenerBusy:
		v.Status = StatusFail
		v.Detail = "none: the notify listener is taken and ptrace is not available, so cordon cannot supervise execs here"
		v.Fix = "see notify-listener and ptrace"
	case sf.UserNotif.Supported && ptraceOK:
		v.Status = StatusOK
		v.Detail = "notify + ptrace: every allowed exec is re-checked at PTRACE_EVENT_EXEC (--verify auto)"
	case sf.UserNotif.Supported:
		v.Status = StatusWarn
		v.Detail = "notify + strict mode: without ptrace, only callers that cannot change their arguments after the check are let through; multithreaded programs cannot exec"
		v.Fix = "see ptrace"
	default:
		v.Status = StatusFail
		v.Detail = "none: seccomp user notification is not available"
		v.Fix = "see seccomp-notify"
	}
	return append(checks, v)
}

// isolationChecks adds the Landlock row and the isolation row (the tier
// --isolation auto picks here). When auto runs the landlock tier, the
// rows that say bubblewrap cannot run are warnings, not failures: cordon
// runs, with less.
func isolationChecks(checks []Check, c isolation.Choice) []Check {
	level := isolation.NewLandlockLevel(c.LandlockABI)
	ll := Check{Name: CheckLandlock, Status: StatusOK, Detail: level.String()}
	switch {
	case c.LandlockABI == 0:
		ll.Status = StatusWarn
		ll.Fix = "boot with landlock in the lsm= kernel parameter (e.g. lsm=landlock,lockdown,yama,integrity,apparmor,bpf) or use Linux 5.13 or later; needed only where bubblewrap cannot run"
	case len(level.Missing) > 0:
		ll.Status = StatusWarn
		ll.Fix = "a newer kernel restricts more in the landlock tier; needed only where bubblewrap cannot run"
	}
	iso := Check{Name: CheckIsolation}
	switch c.Tier {
	case isolation.Bwrap:
		iso.Status = StatusOK
		iso.Detail = "runs get the bwrap tier (namespaces: the full sandbox)"
	case isolation.Landlock:
		iso.Status = StatusWarn
		iso.Detail = "runs get the landlock tier: bubblewrap cannot run here (" + c.Why + "). " + isolation.LandlockCannot
		iso.Fix = c.Fix
		for i := range checks {
			if (checks[i].Name == CheckBwrap || checks[i].Name == CheckUserNS) && checks[i].Status == StatusFail {
				checks[i].Status = StatusWarn
				checks[i].Detail += " (auto runs the landlock tier instead)"
			}
		}
	default:
		iso.Status = StatusFail
		iso.Detail = "runs are refused: " + c.Refusal()
		iso.Fix = c.RefusalFix()
	}
	return append(checks, ll, iso)
}

// gitFacts is what Run found out about the user's git: whether it is
// installed, its version, and safe.bareRepository as git reads it (the
// last value in the system, global and command scopes: a repository's own
// config cannot set it).
type gitFacts struct {
	Missing bool   // no git on PATH
	Version string // "2.39.5" (git version's words after "git version")
	Value   string // safe.bareRepository, "" when unset
	Err     error  // git version or git config failed otherwise
}

// gitBareReposFix is the one command that makes the git-bare-repos row ok
// (with git 2.38 or newer).
const gitBareReposFix = "git config --global safe.bareRepository explicit"

// gitBareReposCheck warns unless git refuses bare repositories it finds by
// itself. A sandboxed run may write its working tree, and cordon refuses
// only new .git names: a directory given HEAD, objects/ and refs/ is a
// repository git takes for its own when run in that directory or below
// it, ahead of the project's .git, and git then runs what that directory's
// config says (core.fsmonitor) on the host. With safe.bareRepository set
// to explicit (git 2.38 and newer), git uses such a directory only when
// told to (--git-dir, GIT_DIR). The row never fails: cordon runs either
// way.
func gitBareReposCheck(f gitFacts) Check {
	c := Check{Name: CheckGitBareRepos}
	const attack = "git run later in a directory a sandboxed run gave HEAD, objects/ and refs/ (cordon refuses only the name .git), " +
		"or below it, takes it for its repository ahead of the project's .git and runs what its config says (core.fsmonitor) on the host"
	v, verr := parseKernelRelease(f.Version) // the same MAJOR.MINOR prefix
	switch {
	case f.Missing:
		c.Status = StatusOK
		c.Detail = "git is not installed: nothing runs a repository a sandboxed run could create"
		return c
	case f.Err != nil:
		c.Status = StatusWarn
		c.Detail = fmt.Sprintf("cannot read git's safe.bareRepository (%v); unless it is explicit, %s", f.Err, attack)
	case verr != nil:
		c.Status = StatusWarn
		c.Detail = fmt.Sprintf("cannot tell git's version from %q: unless it is 2.38 or newer with safe.bareRepository explicit, %s", f.Version, attack)
	case !v.atLeast(2, 38):
		c.Status = StatusWarn
		c.Detail = fmt.Sprintf("git %s has no safe.bareRepository (git 2.38 and newer): %s; upgrade git, then set it", f.Version, attack)
	case f.Value == "explicit":
		c.Status = StatusOK
		c.Detail = "safe.bareRepository is explicit: git takes no bare repository it finds by itself (it needs --git-dir or GIT_DIR), " +
			"which a directory a sandboxed run gives HEAD, objects/ and refs/ is (git 2.45 and newer still take one inside a .git's " +
			"worktrees/ or modules/)"
		return c
	default:
		val := f.Value
		if val == "" {
			val = "unset (all, git's default)"
		}
		c.Status = StatusWarn
		c.Detail = fmt.Sprintf("safe.bareRepository is %s: %s; explicit stops that (before git 2.45 it also stops git run with its "+
			"working directory inside a .git directory)", val, attack)
	}
	c.Fix = gitBareReposFix
	return c
}
