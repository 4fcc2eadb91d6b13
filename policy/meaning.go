package policy

import (
	"path"
	"sort"
	"strings"
	"sync"
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
				"--mirror/--delete/--prune or a +ref or :ref refspec, and config that makes a plain push force " +
				"(remote.*.push=+..., remote.*.mirror) given with -c or set with git config, git remote add --mirror or git clone --mirror; " +
				"every git send-pack and git http-push"},
		{name: "block-device-write", progs: []string{"dd", "shred", "tee", "cp", "install", "truncate"}, kind: mBlockDeviceWrite,
			doc: "writes to a device under /dev other than the non-disks (null, zero, tty*, pts/*, fd/*, shm/*, ...), " +
				"however its path is spelled (/dev//sda, /dev/./sda, /proc/self/root/dev/sda, /proc/1/task/1/root/dev/sda): " +
				"dd of=, shred, tee, cp and install targets, truncate"},
		{name: "privileged-container", progs: []string{"docker", "podman", "nerdctl"}, kind: mPrivilegedContainer,
			doc: "starts a container with the host's privileges: run, create and exec (also as container run/create) with " +
				"--privileged, --cap-add ALL/SYS_ADMIN/SYS_MODULE/SYS_RAWIO/SYS_PTRACE/DAC_READ_SEARCH, --pid=host, --userns=host, " +
				"a host disk with --device, or the host's / mounted however spelled (-tv/:/h, //, /proc/1/root, --mount source=/), and compose run's options"},
		{name: "power-off", progs: []string{"systemctl", "loginctl", "busctl", "dbus-send", "gdbus", "qdbus"}, kind: mPowerOff,
			doc: "powers off, reboots, suspends or halts the machine: systemctl verbs and power targets " +
				"(systemctl start reboot.target, isolate reboot, start shutdown.target, globs), loginctl, and the D-Bus calls " +
				"that do it (busctl, dbus-send, gdbus: method names, StartUnit arguments, unit object paths)"},
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
// option parsers accept: one letter is enough when it is unique to the
// program ("git push --m" is --mirror), and an ambiguous one fails there
// harmlessly.
func isLongPrefix(name string, full ...string) bool {
	if len(name) < 3 || !strings.HasPrefix(name, "--") {
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
	case "send-pack", "http-push":
		// The plumbing under push (and the old WebDAV push), with their
		// own --force, --mirror and +refspecs: every use counts.
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
	case "clone":
		// A mirror clone, or config given to clone, makes every later
		// plain push in the new repository a forced one.
		for i := sub + 1; i < len(a.v); i++ {
			if a.kind[i] != kOpt {
				continue
			}
			s := a.v[i]
			n := optName(s)
			var kv string
			switch {
			case isLongPrefix(n, "--mirror"):
				return true
			case s == "-c" || s == "--config" || (len(n) > 3 && isLongPrefix(n, "--config")):
				v, ok := optValueAt(a, i)
				if !ok {
					return true
				}
				kv = v
			case strings.HasPrefix(s, "-c"):
				kv = s[2:]
			default:
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			if gitConfigForces(k, v, true) {
				return true
			}
		}
	}
	return false
}

// notDisks are the paths below /dev, as globs, that are not disks and that
// dd, tee, cp and shred are routinely pointed at. Every other path under
// /dev counts as a disk: a list of disk names (sd*, nvme*) misses some
// (/dev/root, /dev/VG/LV, /dev/sg0, /dev/ram0), so the meaning lists what
// is safe instead and fails closed.
var notDisks = sync.OnceValue(func() []glob {
	const names = "{null,zero,full,random,urandom,tty,tty[0-9]*,ttyS*,ttyUSB*,console,ptmx,pts/*,stdin," +
		"stdout,stderr,fd/*,shm/*,mqueue/*,hugepages/*,log,kmsg,fuse,net/tun,snd/*,dri/*,input/*}"
	ws, _ := expand(word{text: names, lit: make([]bool, len(names))})
	gs := make([]glob, 0, len(ws))
	for _, w := range ws {
		gs = append(gs, compileGlob(w, 0, len(w.text)))
	}
	return gs
})

// procRoot returns p without a leading /proc/PID/root,
// /proc/PID/task/TID/root or /proc/PID/cwd, which lead back to the root (or,
// for cwd, to a directory Decide cannot see, taken as the root), and
// whether there was one.
func procRoot(p string) (string, bool) {
	if !strings.HasPrefix(p, "/proc/") {
		return p, false
	}
	rest := p[len("/proc/"):]
	j := strings.IndexByte(rest, '/')
	if j < 0 {
		return p, false
	}
	rest = rest[j:]
	if strings.HasPrefix(rest, "/task/") {
		r := rest[len("/task/"):]
		k := strings.IndexByte(r, '/')
		if k < 0 {
			return p, false
		}
		rest = r[k:]
	}
	for _, d := range []string{"/root", "/cwd"} {
		if rest == d || strings.HasPrefix(rest, d+"/") {
			return path.Clean("/" + rest[len(d):]), true
		}
	}
	return p, false
}

// isBlockDevice reports whether p names a block device, however spelled:
// the path is cleaned (// and . and .. folded) and a /proc/PID/root prefix,
// which leads back to the same root, is dropped (see procRoot). A relative
// path cannot be judged without the working directory and does not count.
func isBlockDevice(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	p = path.Clean(p)
	for {
		q, ok := procRoot(p)
		if !ok {
			break
		}
		p = q
	}
	if !strings.HasPrefix(p, "/dev/") {
		return false
	}
	dev := p[len("/dev/"):]
	for i := range notDisks() {
		if notDisks()[i].match(dev) {
			return false
		}
	}
	return true
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

// containerValueLetters are the short options of docker/podman/nerdctl
// run, create and exec that take a value: in a cluster (-itv /:/h) the
// first of them takes the rest of the word, or the next word.
const containerValueLetters = "acehlmpuvw"

// privilegedContainer is the privileged-container meaning.
func privilegedContainer(_ string, a *args) bool {
	if len(a.pos) == 0 {
		return false
	}
	start := -1
	switch a.sub {
	case "run", "create", "exec":
		start = int(a.pos[0]) + 1
	case "container", "compose":
		// docker container run; docker compose [-f x] run: the service's
		// options on the command line (the compose file itself is out of
		// sight, see the README's limits).
		for _, p := range a.pos[1:] {
			switch a.v[p] {
			case "run", "create", "exec":
				start = int(p) + 1
			}
			if start >= 0 {
				break
			}
		}
	}
	if start < 0 {
		return false
	}
	for i := start; i < len(a.v); i++ {
		s := a.v[i]
		if len(s) < 2 || s[0] != '-' {
			continue
		}
		if s[1] != '-' {
			if shortPrivileged(a, i) {
				return true
			}
			continue
		}
		n := optName(s)
		val, ok := optValueAt(a, i)
		switch n {
		case "--privileged":
			if !strings.Contains(s, "=") || !isFalse(val) {
				return true
			}
		case "--cap-add":
			if !ok || dangerousCaps(val) {
				return true
			}
		case "--pid", "--userns":
			if !ok || val == "host" {
				return true
			}
		case "--volume":
			if !ok || rootBind(val) {
				return true
			}
		case "--mount":
			if !ok || rootMount(val) {
				return true
			}
		case "--device":
			// A host disk given to the container: HOST[:CONTAINER[:PERMS]].
			if dev, _, _ := strings.Cut(val, ":"); !ok || isBlockDevice(dev) {
				return true
			}
		}
	}
	return false
}

// shortPrivileged reports whether the single-dash word at i mounts the
// host's root with -v, alone or in a cluster (-tv/:/h, -itv /:/h).
func shortPrivileged(a *args, i int) bool {
	s := a.v[i]
	for j := 1; j < len(s); j++ {
		if strings.IndexByte(containerValueLetters, s[j]) < 0 {
			continue
		}
		val := strings.TrimPrefix(s[j+1:], "=")
		ok := val != ""
		if !ok && i+1 < len(a.v) {
			val, ok = a.v[i+1], true
		}
		return s[j] == 'v' && (!ok || rootBind(val))
	}
	return false
}

// dangerousCaps reports whether a --cap-add value (one capability or a
// comma-separated list, any case, with or without CAP_) holds one that
// gives the host away.
func dangerousCaps(val string) bool {
	for val != "" {
		var c string
		c, val, _ = strings.Cut(val, ",")
		c = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_")
		switch c {
		case "ALL", "SYS_ADMIN", "SYS_MODULE", "SYS_RAWIO", "DAC_READ_SEARCH", "SYS_PTRACE":
			return true
		}
	}
	return false
}

// isRootPath reports whether p is the host's root however spelled: //,
// /., /proc/1/root.
func isRootPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	p = path.Clean(p)
	for {
		q, ok := procRoot(p)
		if !ok {
			break
		}
		p = q
	}
	return p == "/"
}

// rootBind reports whether a -v value (SRC:DST[:OPTS], or a lone path)
// binds the host's root.
func rootBind(val string) bool {
	src, _, _ := strings.Cut(val, ":")
	return isRootPath(src)
}

// rootMount reports whether a --mount value binds the host's root: its
// fields are CSV (a field may be quoted), keys any case.
func rootMount(val string) bool {
	for val != "" {
		var f string
		f, val, _ = strings.Cut(val, ",")
		f = strings.Trim(strings.TrimSpace(f), `"'`)
		k, v, _ := strings.Cut(f, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "source", "src":
			if isRootPath(strings.Trim(v, `"'`)) {
				return true
			}
		}
	}
	return false
}

// Power verbs and the units that do the same when started.
var (
	powerVerbs = lazySet(`poweroff reboot halt kexec suspend hibernate hybrid-sleep
		suspend-then-hibernate soft-reboot rescue emergency sleep exit`)
	// startVerbs start the units they name (aliases included: condrestart
	// is try-restart, force-reload is reload-or-try-restart).
	startVerbs = lazySet(`start restart isolate reload-or-restart try-restart
		try-reload-or-restart reload-or-try-restart condrestart condreload
		force-reload enable reenable`)
	// powerTargets are targets besides the verbs' own that stop the
	// machine when started: shutdown.target conflicts with every service.
	powerTargets = lazySet(`ctrl-alt-del runlevel0 runlevel1 runlevel6 shutdown final umount`)
	powerMethods = lazySet(`PowerOff Reboot Halt KExec Suspend Hibernate HybridSleep
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
		return powerVerbs()[n] || powerTargets()[n]
	case strings.HasPrefix(u, "systemd-") && strings.HasSuffix(u, ".service"):
		return powerVerbs()[strings.TrimSuffix(strings.TrimPrefix(u, "systemd-"), ".service")]
	}
	return false
}

// powerUnitNames lists every unit isPowerUnit accepts, for glob arguments.
var powerUnitNames = sync.OnceValue(func() []string {
	var out []string
	for v := range powerVerbs() {
		out = append(out, v+".target", "systemd-"+v+".service")
	}
	for t := range powerTargets() {
		out = append(out, t+".target")
	}
	sort.Strings(out)
	return out
})

// isPowerUnitArg reports whether a unit argument of systemctl names a
// power unit as systemctl reads it: without a suffix it adds one
// (.target for isolate, .service otherwise: both are tried), and a glob
// names every unit it matches.
func isPowerUnitArg(u string) bool {
	if strings.ContainsAny(u, "*?[") {
		for _, n := range powerUnitNames() {
			if ok, err := path.Match(u, n); ok || err != nil {
				return true
			}
		}
		return false
	}
	if isPowerUnit(u) {
		return true
	}
	if strings.IndexByte(u, '.') < 0 {
		return isPowerUnit(u+".target") || isPowerUnit(u+".service")
	}
	return false
}

// dbusWord returns a D-Bus client's argument as the value it stands for:
// without a dbus-send type prefix (string:, objpath:), without GVariant
// text quotes (gdbus 'reboot.target'), and, for a systemd unit object
// path (/org/freedesktop/systemd1/unit/reboot_2etarget), the unit's name
// with its bus-label escapes decoded.
func dbusWord(s string) string {
	if i := strings.IndexByte(s, ':'); i > 0 && !strings.ContainsAny(s[:i], "/.") {
		s = s[i+1:]
	}
	s = strings.Trim(s, `"' `)
	const unitPath = "/org/freedesktop/systemd1/unit/"
	if strings.HasPrefix(s, unitPath) {
		return busLabelUnescape(s[len(unitPath):])
	}
	return s
}

// busLabelUnescape decodes systemd's bus_label_escape: _XX is the byte
// with hex code XX.
func busLabelUnescape(s string) string {
	if strings.IndexByte(s, '_') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '_' && i+2 < len(s) {
			if c, ok := unhex2(s[i+1], s[i+2]); ok {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unhex2(a, b byte) (byte, bool) {
	h := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	x, ok1 := h(a)
	y, ok2 := h(b)
	return x<<4 | y, ok1 && ok2
}

// powerOff is the power-off meaning.
func powerOff(prog string, a *args) bool {
	switch prog {
	case "systemctl", "loginctl":
		if len(a.pos) == 0 {
			return false
		}
		verb := a.v[a.pos[0]]
		if powerVerbs()[verb] {
			return true
		}
		if prog == "systemctl" && startVerbs()[verb] {
			for _, i := range a.pos[1:] {
				if isPowerUnitArg(a.v[i]) {
					return true
				}
			}
		}
		return false
	}
	// D-Bus clients: a power method of logind or systemd, in its own word
	// (busctl) or as the end of a dotted name (dbus-send, gdbus), or a
	// power unit handed to systemd's StartUnit or named by its object
	// path (busctl call ... /org/freedesktop/systemd1/unit/reboot_2etarget
	// org.freedesktop.systemd1.Unit Start).
	for _, s := range a.v {
		m := s
		if j := strings.LastIndexByte(s, '.'); j >= 0 {
			m = s[j+1:]
		}
		if powerMethods()[m] || isPowerUnit(s) || isPowerUnit(dbusWord(s)) {
			return true
		}
	}
	return false
}
