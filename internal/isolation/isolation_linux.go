// Package isolation finds out which isolation tier works on this host: the
// choice --isolation auto makes (runner) and cordon doctor reports. It is
// the one place that probes bubblewrap for that choice and words the fix
// for a host where bubblewrap cannot run.
package isolation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Tier names, as --isolation spells them.
const (
	Bwrap    = "bwrap"
	Landlock = "landlock"
	None     = "none"
)

// Choice is what auto picks here, and why when it is not bwrap.
type Choice struct {
	// Tier is Bwrap or Landlock; "" when neither works (auto refuses).
	Tier string
	// Why bubblewrap cannot run (empty when Tier is Bwrap).
	Why string
	// Fix is the exact change that makes bubblewrap work on this host.
	Fix string
	// LandlockABI is the kernel's Landlock ABI (0: unavailable).
	LandlockABI int
	// Root says Landlock works but auto refuses it because cordon runs
	// as root (see Choose).
	Root bool
	// Bwrap, when Tier is Bwrap, is the bubblewrap found (bwrap.Find) and
	// probed or keyed: the run starts this one, without a second search.
	Bwrap string
}

// Note is the one line a run prints when auto steps down to Landlock.
func (c Choice) Note() string {
	return fmt.Sprintf("isolation landlock (bubblewrap cannot run here: %s). To get the bwrap tier: %s. "+
		"--isolation landlock silences this line", c.Why, c.Fix)
}

// Refusal is the error auto gives when neither tier works.
func (c Choice) Refusal() string {
	if c.Root {
		return fmt.Sprintf("bubblewrap cannot run here (%s), and %s", c.Why, RootCannot)
	}
	return fmt.Sprintf("no isolation tier works on this host: bubblewrap cannot run (%s) and Landlock is unavailable "+
		"(kernel older than 5.13, or landlock missing from the lsm= boot parameter)", c.Why)
}

// RefusalFix says what to do when auto refuses.
func (c Choice) RefusalFix() string {
	if c.Root {
		return "run cordon as a non-root user (docker run --user 1000:1000, USER in a Dockerfile), where the landlock tier holds; " +
			"or make bubblewrap work: " + c.Fix + "; or name --isolation landlock to accept this"
	}
	return c.Fix + "; or run with --isolation none (exec policy only, no filesystem protection)"
}

// LandlockABI returns the kernel's Landlock ABI version, 0 when Landlock is
// absent or disabled at boot.
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// probeTimeout bounds the bubblewrap smoke run.
const probeTimeout = 5 * time.Second

// Choose probes bubblewrap the way the launcher uses it (read-only root,
// new /dev and /proc, a pid namespace) and picks the tier: bwrap when the
// probe succeeds, else landlock when the kernel has it, else none ("").
func Choose(ctx context.Context) Choice {
	c := Choice{LandlockABI: LandlockABI()}
	bw, err := probeBwrap(ctx)
	if err == nil {
		c.Tier, c.Bwrap = Bwrap, bw
		return c
	}
	c.Why, c.Fix = diagnose(err, hostFacts())
	switch {
	case c.LandlockABI > 0 && os.Geteuid() == 0:
		// Capabilities are dropped in the landlock tier, but root still
		// owns the system's files, and changing their mode, times or
		// user.* attributes is not a Landlock right: a command could
		// chmod 0666 /etc/shadow. Auto does not pick a tier that leaves
		// the host's files open; naming it accepts that (runner warns).
		c.Root = true
	case c.LandlockABI > 0:
		c.Tier = Landlock
	}
	return c
}

// RootCannot is what the landlock tier cannot keep from a command run by
// root (said by auto's refusal, cordon doctor and each such run).
const RootCannot = "run by root the landlock tier cannot protect the host's files: capabilities are dropped, but root owns " +
	"them and Landlock does not stop chmod, utimes or user.* setxattr outside the writable set (chmod 0666 /etc/shadow)"

// errNoBwrap: bubblewrap is not on PATH.
var errNoBwrap = errors.New("bwrap is not on PATH")

// findBwrap is bwrap.Find; this package's tests stand a failing bubblewrap
// in (Find runs none a test could write).
var findBwrap = bwrap.Find

// probeBwrap finds bubblewrap and makes a sandbox with it; it returns the
// bubblewrap it ran.
func probeBwrap(ctx context.Context) (string, error) {
	bw, err := findBwrap()
	if errors.Is(err, bwrap.ErrNotFound) {
		return "", errNoBwrap
	}
	if err != nil {
		return "", err // bwrap.ErrUntrusted: diagnose says what to do
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// What runs inside is bwrap's own --version (it exists wherever bwrap
	// does and makes no namespace itself): only the outer sandbox's
	// creation is probed.
	cmd := exec.CommandContext(ctx, bw, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-pid", "--die-with-parent", "--", bw, "--version")
	// Run on the host: with nothing of the user's environment (an empty
	// LD_LIBRARY_PATH entry is the working directory, where a workload
	// could have left a library bubblewrap loads) and from /.
	cmd.Env, cmd.Dir = []string{}, "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	msg := strings.TrimSpace(stderr.String())
	if runErr == nil {
		return bw, nil
	}
	if msg == "" {
		msg = runErr.Error()
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return "", errors.New(msg)
}

// facts are what decides the fix for this host.
type facts struct {
	root             bool
	container        string // "docker", "podman", other runtime names, or ""
	apparmorRestrict bool   // kernel.apparmor_restrict_unprivileged_userns=1
	cloneOff         bool   // kernel.unprivileged_userns_clone=0
	maxUserNSZero    bool   // user.max_user_namespaces=0
	github           bool
	gitlab           bool
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func hostFacts() facts {
	f := facts{
		root:             os.Geteuid() == 0,
		apparmorRestrict: readTrimmed("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1",
		cloneOff:         readTrimmed("/proc/sys/kernel/unprivileged_userns_clone") == "0",
		maxUserNSZero:    readTrimmed("/proc/sys/user/max_user_namespaces") == "0",
		github:           os.Getenv("GITHUB_ACTIONS") == "true",
		gitlab:           os.Getenv("GITLAB_CI") == "true",
	}
	switch {
	case exists("/run/.containerenv"):
		f.container = "podman"
	case exists("/.dockerenv"):
		f.container = "docker"
	default:
		// systemd and most runtimes set this in pid 1's environment;
		// it is also commonly exported to the container's processes.
		f.container = os.Getenv("container")
	}
	return f
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// apparmorProfile is the AppArmor profile that lets bwrap alone make user
// namespaces on Ubuntu 23.10 and later.
const apparmorProfile = "printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile bwrap /usr/bin/bwrap flags=(unconfined) {\\n  userns,\\n}\\n' " +
	"| sudo tee /etc/apparmor.d/bwrap && sudo apparmor_parser -r /etc/apparmor.d/bwrap"

// diagnose words why bubblewrap failed and the exact fix for this host.
func diagnose(err error, f facts) (why, fix string) {
	if errors.Is(err, errNoBwrap) {
		return "bubblewrap is not installed", "install it: sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap (Fedora), sudo pacman -S bubblewrap (Arch)"
	}
	if errors.Is(err, bwrap.ErrUntrusted) {
		return err.Error(), "install bubblewrap from the distribution (sudo apt-get install bubblewrap), or put the bwrap you use where only root can change it"
	}
	why = err.Error()
	switch {
	case f.container == "docker":
		why += " (inside a Docker container: its default seccomp profile refuses namespace creation and its AppArmor profile refuses mounts)"
		fix = "start the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined and run cordon as a non-root user"
		if f.apparmorRestrict {
			fix += "; the host's kernel.apparmor_restrict_unprivileged_userns must be 0 too"
		}
		if f.gitlab {
			fix += " (GitLab runner: security_opt = [\"seccomp:unconfined\", \"apparmor:unconfined\"] under [runners.docker] in config.toml)"
		}
		return why, fix
	case f.container != "":
		why += fmt.Sprintf(" (inside a %s container)", f.container)
		return why, "start the container with --security-opt seccomp=unconfined (and --security-opt label=disable on SELinux hosts), or allow unprivileged user namespaces in its runtime's settings"
	case f.apparmorRestrict && !f.root:
		why += " (AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns=1)"
		fix = "give bwrap an AppArmor profile: " + apparmorProfile +
			"; or lift the restriction for every program: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
		if f.github {
			fix = "add a step before cordon runs: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
		}
		return why, fix
	case f.cloneOff:
		return why + " (kernel.unprivileged_userns_clone=0)", "sudo sysctl -w kernel.unprivileged_userns_clone=1"
	case f.maxUserNSZero:
		return why + " (user.max_user_namespaces=0)", "sudo sysctl -w user.max_user_namespaces=15000"
	}
	return why, "run cordon doctor for what blocks user namespaces here"
}

// MaxLandlockABI is the newest Landlock ABI whose semantics this tier was
// written and tested against. A newer kernel is used at this level: ABI 9
// would also restrict connecting to pathname unix sockets and ABI 10 UDP,
// each of which needs rules this tier does not make yet.
const MaxLandlockABI = 8

// LandlockLevel says what this kernel's Landlock does for the tier, for
// --debug and doctor.
type LandlockLevel struct {
	ABI  int // the kernel's
	Used int // the level the ruleset is made for (capped at MaxLandlockABI)
	// Missing lists what the tier does not restrict at this level.
	Missing []string
}

func NewLandlockLevel(abi int) LandlockLevel {
	l := LandlockLevel{ABI: abi, Used: min(abi, MaxLandlockABI)}
	add := func(need int, what string) {
		if l.Used < need {
			l.Missing = append(l.Missing, fmt.Sprintf("%s (needs ABI %d)", what, need))
		}
	}
	add(2, "renaming or linking files between writable directories (refused, not restricted)")
	add(3, "truncating files outside the writable set")
	add(4, "TCP connect and bind (--net filter and --net none are refused)")
	add(5, "ioctl on device files")
	add(6, "signals to processes outside the sandbox, and abstract unix sockets outside it")
	return l
}

// String is the one-line summary --debug and doctor print.
func (l LandlockLevel) String() string {
	if l.ABI == 0 {
		return "Landlock unavailable (kernel older than 5.13, or not enabled at boot: add landlock to the lsm= boot parameter)"
	}
	s := fmt.Sprintf("Landlock ABI %d", l.ABI)
	if l.Used != l.ABI {
		s += fmt.Sprintf(" (used as ABI %d)", l.Used)
	}
	if len(l.Missing) > 0 {
		s += "; not restricted at this ABI: " + strings.Join(l.Missing, "; ")
	}
	return s
}

// LandlockCannot is what no Landlock ABI can do for this tier, said in
// --debug, doctor and the README: Landlock grants access to hierarchies
// and cannot take back part of a granted one.
const LandlockCannot = "Landlock only grants: it cannot make an existing path inside a writable directory read-only " +
	"(.git/hooks, .git/config and policy files there stay writable; creating protected names is still refused; --ro inside --rw has no effect), " +
	"nor make a path inside one unreadable (such a deny_read is refused); deny_read elsewhere is kept by granting everything beside it " +
	"(names below it stay listable, contents do not); chmod, utimes and user.* xattrs of your files outside the writable set are not restricted; " +
	"a reachable ssh agent cannot be kept from the command (refused while keys are denied); nothing is hidden (the cordon daemon's directory is readable); no private ~/.cache or ~/.local/state (read-only; XDG_CACHE_HOME points into TMPDIR); " +
	"no pid namespace (the command sees host processes) and no private /tmp (TMPDIR points to a private directory, /tmp itself is read-only); " +
	"no network namespace: with --net filter or none the host's pathname unix sockets (D-Bus, docker) stay reachable"
