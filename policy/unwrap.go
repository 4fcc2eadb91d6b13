package policy

import "strings"

// This file holds the programs whose argv does not say, in the usual way,
// which program runs: dynamic loaders run the program named in their
// arguments, multi-call binaries run the applet named by argv[0], python -m
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
	loaderValueOpts = setOf(`--library-path --inhibit-rpath --audit --preload
		--argv0 --glibc-hwcaps-prepend --glibc-hwcaps-mask`)
	loaderFlagOpts = setOf(`--list --verify --inhibit-cache --list-tunables
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
		case loaderValueOpts[s]:
			i++
		case loaderFlagOpts[s]:
		case strings.HasPrefix(s, "--") && strings.Contains(s, "=") && loaderValueOpts[s[:strings.IndexByte(s, '=')]]:
		default:
			return i
		}
	}
	return 0
}

// multiCall lists multi-call binaries: one file that runs the applet named
// by argv[0], or by argv[1] when argv[0] is the binary's own name.
var multiCall = []string{"busybox", "toybox"}

// multiCallName returns the multi-call binary base is, or "". Like busybox
// itself, any name starting with "busybox" counts (busybox.static).
func multiCallName(base string) string {
	for _, mc := range multiCall {
		if strings.HasPrefix(base, mc) {
			return mc
		}
	}
	return ""
}

// multiCallApplet returns the applet a multi-call binary runs and the argv
// the applet sees. For a multi-call binary argv[0] does choose the program:
// busybox with argv[0] "ls" is ls, whatever the file is called.
func multiCallApplet(argv []string) (string, []string) {
	if len(argv) == 0 {
		return "", nil
	}
	a0 := baseName(argv[0])
	if multiCallName(a0) == "" && a0 != "" {
		return a0, argv
	}
	if len(argv) < 2 {
		return "", nil
	}
	return baseName(argv[1]), argv[1:]
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
			if strings.IndexByte(s, '=') < 0 && gitTool.before[s] {
				i++
			}
		}
		if sub < 0 {
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
