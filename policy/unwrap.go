package policy

import (
	"strings"
	"sync"
)

// This file holds the programs whose argv does not say, in the usual way,
// which program runs: dynamic loaders run the program named in their
// arguments, multi-call programs run the applet named by argv[0], python -m
// runs a module in-process, and git dispatches on argv[0] and on aliases
// defined with -c.

// loaderPaths are where dynamic loaders live, as globs for Files.Lookup, so
// that a renamed or copied loader is still recognised.
// (/lib, /lib64, /lib32, /libx32, their /usr twins, and the multiarch
// directories such as /lib/x86_64-linux-gnu).
var loaderPaths = []string{
	"/lib*/ld-*.so*", "/usr/lib*/ld-*.so*",
	// Multiarch directories only: a glob over every subdirectory of
	// /usr/lib lists hundreds of them on each refresh.
	"/lib/*-linux-*/ld-*.so*", "/usr/lib/*-linux-*/ld-*.so*",
}

// isLoaderName reports whether base names a dynamic loader: ld-*.so*
// (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-musl-x86_64.so.1) or
// ld.so.
func isLoaderName(base string) bool {
	return base == "ld.so" || (strings.HasPrefix(base, "ld-") && strings.Contains(base[3:], ".so"))
}

// Loader options, glibc's and musl's. The loader takes the first word that
// is not one of these as the program, even if it starts with '-'.
var (
	loaderValueOpts = lazySet(`--library-path --inhibit-rpath --audit --preload
		--argv0 --glibc-hwcaps-prepend --glibc-hwcaps-mask`)
	loaderFlagOpts = lazySet(`--list --verify --inhibit-cache --list-tunables
		--list-diagnostics --help --version`)
)

// loaderTarget returns the index in argv of the program a loader runs, or 0
// when there is none (ld.so --help). The program is taken as written: the
// loader opens it relative to its working directory or searches its library
// path for a bare name, which the policy cannot see, so the program is
// matched by its name and, for path rules, by the path as written.
func loaderTarget(argv []string) int {
	for i := 1; i < len(argv); i++ {
		s := argv[i]
		switch {
		case loaderValueOpts()[s]:
			i++
		case loaderFlagOpts()[s]:
		case strings.HasPrefix(s, "--") && strings.Contains(s, "=") && loaderValueOpts()[s[:strings.IndexByte(s, '=')]]:
		default:
			return i
		}
	}
	return 0
}

// loaderLoads reports whether opts, the loader's options before its
// program, make it load code of their choosing into the program:
// --preload, --audit, --library-path (LD_PRELOAD, LD_AUDIT and
// LD_LIBRARY_PATH given as options).
func loaderLoads(opts []string) bool {
	for i := 1; i < len(opts); i++ {
		s := opts[i]
		if k := strings.IndexByte(s, '='); k >= 0 {
			s = s[:k]
		}
		switch s {
		case "--preload", "--audit", "--library-path":
			return true
		}
	}
	return false
}

// loaderArgv0 returns the value of the last --argv0 option among opts, the
// loader's options before its program, or "": the argv[0] the program sees,
// which decides what a multi-call program runs.
func loaderArgv0(opts []string) string {
	a0 := ""
	for i := 1; i < len(opts); i++ {
		switch s := opts[i]; {
		case s == "--argv0" && i+1 < len(opts):
			a0 = opts[i+1]
			i++
		case strings.HasPrefix(s, "--argv0="):
			a0 = s[len("--argv0="):]
		case loaderValueOpts()[s]:
			i++
		}
	}
	return a0
}

// multiCallProg is a program whose behaviour depends on the name it was
// started as: one file that is several programs, chosen by argv[0].
type multiCallProg struct {
	// name is the program's own name, as passed to Files.Lookup.
	name string
	// applets lists the names that make it another program, in the order
	// it tests them, each matched as a substring of argv[0]'s base name (as
	// systemd's invoked_as does). Nil means every name other than its own
	// is an applet, matched exactly (busybox, toybox); started under its own
	// name, such a program runs the applet argv[1] names.
	applets []string
}

// multiCall lists the multi-call programs Decide knows. systemctl is
// halt, poweroff, reboot, shutdown, telinit and runlevel when started
// under one of those names (systemd installs them as symlinks to it); it
// tests "init" before "telinit", and both mean telinit.
var multiCall = []multiCallProg{
	{name: "busybox"},
	{name: "toybox"},
	{name: "systemctl", applets: []string{"halt", "poweroff", "reboot", "shutdown", "init", "telinit", "runlevel"}},
}

// own reports whether base is m's own name. Like busybox itself, any name
// starting with "busybox" counts (busybox.static).
func (m *multiCallProg) own(base string) bool {
	if m.applets == nil {
		return strings.HasPrefix(base, m.name)
	}
	return base == m.name
}

// multiCallNamed returns the multi-call program base names, or nil.
func multiCallNamed(base string) *multiCallProg {
	for i := range multiCall {
		if multiCall[i].own(base) {
			return &multiCall[i]
		}
	}
	return nil
}

// startedAs returns the name a program started with argv0 looks itself up
// by: the base name without the leading '-' that marks a login shell
// (argv[0] "-sh"). busybox strips the dash before taking the base name; the
// dash is stripped after it too, which can only name an applet busybox
// would not find.
func startedAs(argv0 string) string {
	return strings.TrimPrefix(baseName(strings.TrimPrefix(argv0, "-")), "-")
}

// applet returns the program m runs when started with argv, the argv that
// program sees, and whether m runs as itself. Started under its own name,
// busybox runs the applet argv[1] names, unless argv[1] is one of its own
// options (--help, --list): then it runs as itself, and the applet
// returned is only a guess for deny rules (busybox --help reboot).
func (m *multiCallProg) applet(argv []string) (applet string, rest []string, self bool) {
	if len(argv) == 0 {
		return "", nil, true
	}
	a0 := startedAs(argv[0])
	if m.applets != nil {
		for _, a := range m.applets {
			if strings.Contains(a0, a) {
				return a, argv, false
			}
		}
		return "", nil, true
	}
	if a0 != "" && !m.own(a0) {
		return a0, argv, false
	}
	if len(argv) < 2 {
		return "", nil, true
	}
	if strings.HasPrefix(argv[1], "-") {
		// Its own options (--help APPLET, --list), or a name it will not
		// find (-reboot): a guess, for deny rules only.
		if strings.HasPrefix(argv[1], "--") && len(argv) > 2 {
			return startedAs(argv[2]), argv[2:], true
		}
		return startedAs(argv[1]), argv[1:], true
	}
	// busybox APPLET ARGS...; "busybox /bin/ls" works too.
	return baseName(argv[1]), argv[1:], false
}

// isPython reports whether base names a Python interpreter: python,
// python3, python3.12, pypy3.
func isPython(base string) bool {
	return isVersioned(base, "python") || isVersioned(base, "pypy")
}

// pythonModule returns the top-level module python -m runs and the argv
// the module sees (argv[0] replaced by the module), or "" when python runs
// a script, -c code or a REPL. Python's own short options cluster (-Im).
func pythonModule(argv []string) (string, []string) {
	for i := 1; i < len(argv); i++ {
		s := argv[i]
		switch {
		case s == "--check-hash-based-pycs":
			i++
			continue
		case strings.HasPrefix(s, "--"):
			if s == "--" {
				return "", nil
			}
			continue
		case len(s) < 2 || s[0] != '-':
			return "", nil // a script, or - for stdin
		}
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case 'c':
				return "", nil
			case 'W', 'X':
				if j+1 == len(s) {
					i++
				}
				j = len(s)
			case 'm':
				var mod string
				var rest []string
				if j+1 < len(s) {
					mod = s[j+1:]
					rest = make([]string, 0, len(argv)-i)
					rest = append(append(rest, mod), argv[i+1:]...)
				} else if i+1 < len(argv) {
					mod, rest = argv[i+1], argv[i+1:]
				} else {
					return "", nil
				}
				if k := strings.IndexByte(mod, '.'); k >= 0 {
					mod = mod[:k]
				}
				return mod, rest
			}
		}
	}
	return "", nil
}

// maxGitAliases bounds alias expansion (git itself rejects alias loops).
const maxGitAliases = 16

// gitArgs returns git's arguments (argv without argv[0]) as git will
// interpret them:
//   - argv[0] named git-NAME runs git NAME (git-push origin is git push origin);
//   - a subcommand defined as an alias with -c alias.NAME=VALUE on the same
//     command line is replaced by VALUE's words, as git does. Aliases
//     starting with "!" run a shell, whose execs are decided on their own.
//
// Aliases from config files and the environment are invisible here (see the
// README's limits). gitArgs allocates only when it rewrites.
func gitArgs(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	v := argv[1:]
	if a0 := baseName(argv[0]); strings.HasPrefix(a0, "git-") && len(a0) > 4 {
		v = append([]string{a0[4:]}, v...)
	}
	for n := 0; n < maxGitAliases; n++ {
		sub := -1
		for i := 0; i < len(v); i++ {
			s := v[i]
			if len(s) < 2 || s[0] != '-' {
				sub = i
				break
			}
			if s == "--" {
				break
			}
			if strings.IndexByte(s, '=') < 0 && toolFor("git").before[s] {
				i++
			}
		}
		if sub < 0 {
			return v
		}
		if gitBuiltins()[v[sub]] {
			// git runs a built-in command before looking for an alias of
			// the same name: -c alias.push=status does not change push.
			return v
		}
		def, ok := findAlias(v[:sub], v[sub])
		if !ok || strings.HasPrefix(def, "!") {
			return v
		}
		words := strings.Fields(def)
		w := make([]string, 0, len(v)+len(words))
		w = append(append(append(w, v[:sub]...), words...), v[sub+1:]...)
		v = w
	}
	return v
}

// gitExternal are the git commands that are separate programs, often not
// installed (git-svn, git-p4, gitk): git looks for an alias of such a name
// when the program is missing, so an alias given with -c may run instead.
var gitExternal = lazySet(`archimport citool cvsexportcommit cvsimport cvsserver
	difftool--helper filter-branch gitk gui instaweb mergetool p4 quiltimport
	request-pull send-email subtree svn web--browse scalar`)

// gitBuiltins are the git commands an alias of the same name never
// replaces: every command but the external ones.
var gitBuiltins = sync.OnceValue(func() set {
	s := set{}
	for c := range gitCommands() {
		if !gitExternal()[c] {
			s[c] = true
		}
	}
	return s
})

// findAlias returns the value of the last -c alias.NAME=VALUE among the
// global options opts. Git compares the key case-insensitively.
func findAlias(opts []string, name string) (string, bool) {
	def, found := "", false
	for i := 0; i+1 < len(opts); i++ {
		if opts[i] != "-c" {
			continue
		}
		kv := opts[i+1]
		i++
		k, val, ok := strings.Cut(kv, "=")
		if !ok || len(k) < 6 || !strings.EqualFold(k[:6], "alias.") {
			continue
		}
		if strings.EqualFold(k[6:], name) {
			def, found = val, true
		}
	}
	return def, found
}
