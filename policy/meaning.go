package policy

import (
	"path"
	"sort"
	"strings"
)

// A meaning is something a rule can name instead of a spelling: "deny:
// @git-force-push" refuses a force push however git is asked for one. Each
// meaning is a predicate over the arguments, written with the programs'
// real semantics, and lists the programs it applies to; the rule then
// matches those programs (by name, path and identity, like any rule)
// whenever the predicate holds. Predicates err towards matching: a meaning
// is for deny and ask rules.
type meaning struct {
	name  string
	progs []string
	doc   string
	kind  meaningKind
}

type meaningKind uint8

const (
	mGitForcePush meaningKind = iota
	mBlockDeviceWrite
	mPrivilegedContainer
	mPowerOff
)

// match reports whether a, the arguments of program prog, have the
// meaning. It dispatches with a switch, not a function value, so that the
// arguments (on Decide's stack) do not escape to the heap.
func (m *meaning) match(prog string, a *args) bool {
	switch m.kind {
	case mGitForcePush:
		return gitForcePush(prog, a)
	case mBlockDeviceWrite:
		return blockDeviceWrite(prog, a)
	case mPrivilegedContainer:
		return privilegedContainer(prog, a)
	case mPowerOff:
		return powerOff(prog, a)
	}
	return false
}

var meanings = map[string]*meaning{}

func init() {
	for _, m := range []*meaning{
		{name: "git-force-push", progs: []string{"git"}, kind: mGitForcePush,
			doc: "rewrites or deletes remote history: push with -f/--force/--force-with-lease/--force-if-includes/" +
				"--mirror/--delete/--prune or a +ref or :ref refspec, send-pack, and config that makes a plain push force " +
				"(remote.*.push=+..., remote.*.mirror) given with -c or set with git config or git remote add --mirror"},
		{name: "block-device-write", progs: []string{"dd", "shred", "tee", "cp", "install", "truncate"}, kind: mBlockDeviceWrite,
			doc: "writes to a disk-like block device under /dev, however its path is spelled (/dev//sda, /dev/./sda, " +
				"/proc/self/root/dev/sda): dd of=, shred, tee, cp and install targets, truncate"},
		{name: "privileged-container", progs: []string{"docker", "podman", "nerdctl"}, kind: mPrivilegedContainer,
			doc: "starts a container with the host's privileges: run, create and exec (also as container run/create) with " +
				"--privileged, --cap-add ALL/SYS_ADMIN/SYS_MODULE, --pid=host, or the host's / mounted"},
		{name: "power-off", progs: []string{"systemctl", "loginctl", "busctl", "dbus-send", "gdbus", "qdbus"}, kind: mPowerOff,
			doc: "powers off, reboots, suspends or halts the machine: systemctl verbs and power targets " +
				"(systemctl start reboot.target), loginctl, and the D-Bus calls that do it (busctl, dbus-send, gdbus)"},
	} {
		meanings[m.name] = m
	}
}

// Meanings returns the names of the meanings a rule can name (@NAME) with
// what each covers, sorted by name.
func Meanings() [][2]string {
	var out [][2]string
	for _, m := range meanings {
		out = append(out, [2]string{m.name, m.doc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// optName returns the name of option word s, without any =value.
func optName(s string) string {
	if e := strings.IndexByte(s, '='); e >= 0 {
		return s[:e]
	}
	return s
}

// optValueAt returns the value of the option at i: attached with '=', or
// the next word. ok is false when there is none.
func optValueAt(a *args, i int) (string, bool) {
	if e := strings.IndexByte(a.v[i], '='); e >= 0 {
		return a.v[i][e+1:], true
	}
	if i+1 < len(a.v) && a.kind[i+1] != kSkip && a.kind[i+1] != kOpt {
		return a.v[i+1], true
	}
	return "", false
}

// isLongPrefix reports whether the long option word name ("--forc") is an
// abbreviation of, or is, one of full ("--force"), as git's and GNU's
// option parsers accept. Two letters at least, so "--f" is not everything.
func isLongPrefix(name string, full ...string) bool {
	if len(name) < 4 || !strings.HasPrefix(name, "--") {
		return false
	}
	for _, f := range full {
		if strings.HasPrefix(f, name) {
			return true
		}
	}
	return false
}

// hasShort reports whether single-dash word s holds the letter c, as a
// cluster (-fu) or alone.
func hasShort(s string, c byte) bool {
	return isCluster(s) && strings.IndexByte(clusterLetters(s), c) >= 0
}

// gitConfigForces reports whether config key k with value v makes a plain
// git push force or mirror. An unknown value (set from the environment
// with --config-env) counts as forcing.
func gitConfigForces(k, v string, known bool) bool {
	k = strings.ToLower(k)
	if !strings.HasPrefix(k, "remote.") {
		return false
	}
	switch {
	case strings.HasSuffix(k, ".push"):
		return !known || strings.HasPrefix(v, "+")
	case strings.HasSuffix(k, ".mirror"):
		return !known || !isFalse(v)
	}
	return false
}

func isFalse(v string) bool {
	switch strings.ToLower(v) {
	case "false", "no", "off", "0":
		return true
	}
	return false
}

// gitForcePush is the git-force-push meaning, over git's arguments as
// gitArgs rewrote them (aliases given with -c expanded).
func gitForcePush(_ string, a *args) bool {
	sub := len(a.v)
	if len(a.pos) > 0 {
		sub = int(a.pos[0])
	}
	// Config on the command line, before the subcommand.
	for i := 0; i < sub; i++ {
		switch s := a.v[i]; {
		case s == "-c" && i+1 < sub:
			k, v, _ := strings.Cut(a.v[i+1], "=")
			if gitConfigForces(k, v, true) {
				return true
			}
		case s == "--config-env" && i+1 < sub:
			k, _, _ := strings.Cut(a.v[i+1], "=")
			if gitConfigForces(k, "", false) {
				return true
			}
		case strings.HasPrefix(s, "--config-env="):
			k, _, _ := strings.Cut(s[len("--config-env="):], "=")
			if gitConfigForces(k, "", false) {
				return true
			}
		}
	}
	if len(a.pos) == 0 {
		return false
	}
	switch a.sub {
	case "send-pack":
		// The plumbing under push, with its own --force, --mirror and
		// +refspecs: every use counts.
		return true
	case "push":
		for i := sub + 1; i < len(a.v); i++ {
			s := a.v[i]
			switch a.kind[i] {
			case kOpt:
				n := optName(s)
				if isLongPrefix(n, "--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune") ||
					hasShort(s, 'f') || hasShort(s, 'd') {
					return true
				}
			case kPos:
				if strings.HasPrefix(s, "+") || strings.HasPrefix(s, ":") {
					return true
				}
			}
		}
	case "config":
		// git config [set] [--add] remote.X.push +refs/... sets what a
		// later plain push does.
		for i := sub + 1; i < len(a.v); i++ {
			if a.kind[i] != kPos {
				continue
			}
			k := strings.ToLower(a.v[i])
			if strings.HasPrefix(k, "remote.") && (strings.HasSuffix(k, ".mirror") || strings.HasSuffix(k, ".push")) {
				v, known := "", false
				for j := i + 1; j < len(a.v); j++ {
					if a.kind[j] == kPos {
						v, known = a.v[j], true
						break
					}
				}
				if !known || gitConfigForces(k, v, true) {
					return true
				}
			}
		}
	case "remote":
		for i := sub + 1; i < len(a.v); i++ {
			if a.kind[i] == kOpt && isLongPrefix(optName(a.v[i]), "--mirror") {
				return true
			}
		}
	}
	return false
}

// blockDevs are the disk-like devices under /dev, as globs on the path
// below /dev: not /dev/null, /dev/zero, /dev/stdout, /dev/tty and the like.
var blockDevs = func() []glob {
	ws, _ := expand(word{text: blockDevices, lit: make([]bool, len(blockDevices))})
	gs := make([]glob, 0, len(ws)+1)
	for _, w := range ws {
		gs = append(gs, compileGlob(w, 0, len(w.text)))
	}
	return append(gs, compileGlob(word{text: "block/*", lit: make([]bool, 7)}, 0, 7))
}()

// isBlockDevice reports whether p names a block device, however spelled:
// the path is cleaned (// and . and .. folded) and a /proc/PID/root prefix,
// which leads back to the same root, is dropped. A relative path cannot be
// judged without the working directory and does not count.
func isBlockDevice(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	p = path.Clean(p)
	for strings.HasPrefix(p, "/proc/") {
		rest := p[len("/proc/"):]
		j := strings.IndexByte(rest, '/')
		if j < 0 || !strings.HasPrefix(rest[j:], "/root") {
			break
		}
		p = path.Clean("/" + strings.TrimPrefix(rest[j:], "/root"))
	}
	if !strings.HasPrefix(p, "/dev/") {
		return false
	}
	dev := p[len("/dev/"):]
	for i := range blockDevs {
		if blockDevs[i].match(dev) {
			return true
		}
	}
	return false
}

// blockDeviceWrite is the block-device-write meaning for program prog:
// which word is written to depends on it.
func blockDeviceWrite(prog string, a *args) bool {
	switch prog {
	case "dd":
		for i, k := range a.kind {
			if (k == kPos || k == kVal) && strings.HasPrefix(a.v[i], "of=") && isBlockDevice(a.v[i][3:]) {
				return true
			}
		}
		return false
	case "cp", "install":
		// The target: the last positional word, or -t DIR's value.
		for i, k := range a.kind {
			if k == kOpt && (a.v[i] == "-t" || isLongPrefix(optName(a.v[i]), "--target-directory")) {
				if v, ok := optValueAt(a, i); ok && isBlockDevice(v) {
					return true
				}
			}
		}
		return len(a.pos) > 0 && isBlockDevice(a.v[a.pos[len(a.pos)-1]])
	}
	// shred, tee, truncate: every positional word is written to.
	for _, i := range a.pos {
		if isBlockDevice(a.v[i]) {
			return true
		}
	}
	return false
}

// privilegedContainer is the privileged-container meaning.
func privilegedContainer(_ string, a *args) bool {
	if len(a.pos) == 0 {
		return false
	}
	start := int(a.pos[0]) + 1
	switch a.sub {
	case "run", "create", "exec":
	case "container":
		if len(a.pos) < 2 {
			return false
		}
		switch a.v[a.pos[1]] {
		case "run", "create", "exec":
		default:
			return false
		}
		start = int(a.pos[1]) + 1
	default:
		return false
	}
	for i := start; i < len(a.v); i++ {
		s := a.v[i]
		if !strings.HasPrefix(s, "-") || s == "-" {
			continue
		}
		n := optName(s)
		val, ok := optValueAt(a, i)
		switch {
		case n == "--privileged":
			if !strings.Contains(s, "=") || !isFalse(val) {
				return true
			}
		case n == "--cap-add":
			c := strings.ToUpper(strings.TrimPrefix(strings.ToUpper(val), "CAP_"))
			if !ok || c == "ALL" || c == "SYS_ADMIN" || c == "SYS_MODULE" || c == "SYS_RAWIO" {
				return true
			}
		case n == "--pid" || n == "--userns":
			if !ok || val == "host" {
				return true
			}
		case n == "-v" || n == "--volume":
			if !ok || val == "/" || strings.HasPrefix(val, "/:") {
				return true
			}
		case strings.HasPrefix(s, "-v/"):
			if v := s[2:]; v == "/" || strings.HasPrefix(v, "/:") {
				return true
			}
		case n == "--mount":
			if !ok {
				return true
			}
			for _, f := range strings.Split(val, ",") {
				k, v, _ := strings.Cut(f, "=")
				if (k == "source" || k == "src") && path.Clean(v) == "/" {
					return true
				}
			}
		}
	}
	return false
}

// Power verbs and the units that do the same when started.
var (
	powerVerbs = setOf(`poweroff reboot halt kexec suspend hibernate hybrid-sleep
		suspend-then-hibernate soft-reboot rescue emergency sleep`)
	startVerbs = setOf(`start restart isolate reload-or-restart try-restart
		try-reload-or-restart enable reenable`)
	powerMethods = setOf(`PowerOff Reboot Halt KExec Suspend Hibernate HybridSleep
		SuspendThenHibernate SoftReboot Sleep ScheduleShutdown PowerOffWithFlags
		RebootWithFlags HaltWithFlags KExecWithFlags SuspendWithFlags
		HibernateWithFlags HybridSleepWithFlags SuspendThenHibernateWithFlags`)
)

// isPowerUnit reports whether unit starting does what a power verb does:
// reboot.target, systemd-poweroff.service, runlevel0.target, ...
func isPowerUnit(u string) bool {
	switch {
	case strings.HasSuffix(u, ".target"):
		n := strings.TrimSuffix(u, ".target")
		return powerVerbs[n] || n == "ctrl-alt-del" || n == "runlevel0" || n == "runlevel1" || n == "runlevel6"
	case strings.HasPrefix(u, "systemd-") && strings.HasSuffix(u, ".service"):
		return powerVerbs[strings.TrimSuffix(strings.TrimPrefix(u, "systemd-"), ".service")]
	}
	return false
}

// powerOff is the power-off meaning.
func powerOff(prog string, a *args) bool {
	switch prog {
	case "systemctl", "loginctl":
		if len(a.pos) == 0 {
			return false
		}
		verb := a.v[a.pos[0]]
		if powerVerbs[verb] {
			return true
		}
		if prog == "systemctl" && startVerbs[verb] {
			for _, i := range a.pos[1:] {
				if isPowerUnit(a.v[i]) {
					return true
				}
			}
		}
		return false
	}
	// D-Bus clients: a power method of logind or systemd, in its own word
	// (busctl) or as the end of a dotted name (dbus-send, gdbus), or a
	// power unit handed to systemd's StartUnit.
	for _, s := range a.v {
		m := s
		if j := strings.LastIndexByte(s, '.'); j >= 0 {
			m = s[j+1:]
		}
		if powerMethods[m] || isPowerUnit(s) {
			return true
		}
	}
	return false
}
