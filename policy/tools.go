package policy

import (
	"fmt"
	"strings"
	"sync"
)

// tool describes how one program parses its command line, as far as rule
// matching needs to know. Programs without an entry use heuristicTool.
type tool struct {
	// before lists options that take a separate value (the next argument)
	// when they appear before the subcommand.
	before set
	// anywhere lists options that take a separate value wherever they
	// appear: before the subcommand and after it (cobra persistent flags,
	// npm's and pip's general options, go's build flags).
	anywhere set
	// sub means the program has subcommands: the first positional word is
	// the subcommand, and a rule's first word must match it exactly there.
	sub bool
	// abbrev means the program accepts unambiguous abbreviations of long
	// options (GNU getopt_long, git's parse-options, optparse, nopt).
	abbrev bool
	// cluster means single-dash options can be combined (-fu is -f -u).
	cluster bool
	// dashes means one and two leading dashes are equivalent (Go's flag
	// package: -race and --race).
	dashes bool
	// plus means a +toolchain word may precede the subcommand (rustup).
	plus bool
	// abbrevSub means the program accepts unambiguous abbreviations of its
	// subcommands (npm publ is npm publish).
	abbrevSub bool
	// aliases maps built-in subcommand aliases to their canonical name.
	aliases map[string]string
	// gitLike enables git's argv[0] dispatch (git-push) and expansion of
	// aliases defined on the command line with -c alias.NAME=VALUE.
	gitLike bool
	// stopAfter, when not 0, ends option parsing once that many
	// positional words were seen: ssh's destination and the first word of
	// the remote command, after which every word is the remote command's.
	stopAfter int
	// host means the first positional word is a destination host
	// ([user@]host, ssh://[user@]host[:port]): rules match it by the host
	// alone or as written, and deny rules also by the jump hosts and
	// HostName options that make the connection go elsewhere.
	host bool
	// normalize means the program reads '_' in a long option's name as
	// '-' (pflag's WordSepNormalizeFunc, as kubectl uses).
	normalize bool
	// boolWords means an option that takes no value still consumes a
	// following "true" or "false" (nopt, npm's parser: --dry-run false;
	// unknown options are booleans there too).
	boolWords bool
}

type set map[string]bool

// lazySet returns setOf(words), made on first use. The package's tables
// are built by the process that decides, not at start-up by every process
// of the binary: the sandbox's init runs the same binary and uses none of
// them, and the runner builds them while bubblewrap starts (Warm).
func lazySet(words string) func() set {
	return sync.OnceValue(func() set { return setOf(words) })
}

func setOf(words string) set {
	s := set{}
	for _, w := range strings.Fields(words) {
		s[w] = true
	}
	return s
}

// takesValue reports whether option o (without any =value) consumes the
// next argument. beforeSub says whether the subcommand was not seen yet.
func (t *tool) takesValue(o string, beforeSub bool) bool {
	v, _ := t.valueOpt(o, beforeSub)
	return v
}

// valueOpt is takesValue, also saying whether the answer came from
// reading o as an abbreviation: for a program that accepts abbreviated
// long options, a prefix of a value-taking option ("npm --loglev info",
// "pip --retr 0") takes the next word too. The program may read a prefix
// that is ambiguous, or also a prefix of a flag cordon does not list, as
// something else; Decide then tries both readings for deny and ask rules.
func (t *tool) valueOpt(o string, beforeSub bool) (takes, abbrev bool) {
	if t.dashes && strings.HasPrefix(o, "--") {
		o = o[1:]
	}
	if t.normalize && strings.IndexByte(o, '_') >= 0 {
		// pflag's word-separator normalisation (kubectl): --request_timeout
		// is --request-timeout.
		o = strings.ReplaceAll(o, "_", "-")
	}
	if t.anywhere[o] || (beforeSub && t.before[o]) {
		return true, false
	}
	if t.abbrev && len(o) > 2 && o[1] == '-' && (prefixOfAny(t.anywhere, o) || (beforeSub && prefixOfAny(t.before, o))) {
		return true, true
	}
	return false, false
}

// prefixOfAny reports whether o is a prefix of one of the options in s.
func prefixOfAny(s set, o string) bool {
	for k := range s {
		if strings.HasPrefix(k, o) {
			return true
		}
	}
	return false
}

// canonical returns the canonical name of subcommand s.
func (t *tool) canonical(s string) string {
	if t.host {
		return hostOf(s)
	}
	if c, ok := t.aliases[s]; ok {
		return c
	}
	return s
}

// heuristicTool is used for programs without a table: every word starting
// with '-' is an option that takes no separate value, a value is only
// recognized when attached (--opt=value), the first other word starts the
// positional words, short options may cluster and long options may be
// abbreviated (the GNU getopt_long conventions).
var heuristicTool = &tool{abbrev: true, cluster: true}

// The tables below list, per program, the options whose value is a separate
// argument. Only options that take a value matter: flags and unknown options
// are skipped as single words, and --opt=value is always a single word.
// Sources: each program's own reference documentation (git(1), docker
// --help, podman(1), kubectl options, gh help, npm config, pnpm, yarn,
// cargo(1), go help build/test, pip general options).
// builtinTools maps a program name to its table; pip's versioned names
// are handled by toolFor. Made on first use (see lazySet).
var builtinTools = sync.OnceValue(func() map[string]*tool {
	gitTool := &tool{
		before: setOf(`-C -c --git-dir --work-tree --namespace --super-prefix
			--config-env --attr-source`),
		sub: true, abbrev: true, cluster: true, gitLike: true,
	}
	dockerTool := &tool{
		before: setOf(`--config -c --context -H --host -l --log-level
			--tlscacert --tlscert --tlskey`),
		sub: true, cluster: true,
	}
	podmanTool := &tool{
		anywhere: setOf(`--cdi-spec-dir --cgroup-manager --config --conmon
			-c --connection --events-backend --hooks-dir --identity
			--imagestore --log-level --module --network-cmd-path
			--network-config-dir --out --root --runroot --runtime
			--runtime-flag --ssh --storage-driver --storage-opt --tmpdir
			--url --volumepath`),
		sub: true, cluster: true,
	}
	kubectlTool := &tool{
		anywhere: setOf(`--as --as-group --as-uid --cache-dir
			--certificate-authority --client-certificate --client-key
			--cluster --context --kubeconfig -n --namespace --password
			--profile --profile-output --request-timeout -s --server
			--tls-server-name --token --user --username -v --v --vmodule
			--log-dir --log-file --log-file-max-size --log-flush-frequency
			--stderrthreshold --log-backtrace-at --kuberc --disable-compression
			--insecure-skip-tls-verify --match-server-version --warnings-as-errors`),
		sub: true, cluster: true, normalize: true,
	}
	// nerdctl's global options (nerdctl --help): containerd's address,
	// namespace, snapshotter and paths.
	nerdctlTool := &tool{
		anywhere: setOf(`-a --address -H --host -n --namespace --snapshotter
			--storage-driver --cni-path --cni-netconfpath --data-root
			--cgroup-manager --host-gateway-ip --hosts-dir --bridge-ip
			--experimental --kube-hide-dupe --cdi-spec-dirs --userns-remap`),
		sub: true, cluster: true,
	}
	ghTool := &tool{
		anywhere: setOf(`-R --repo --hostname -X --method -H --header
			-f --field -F --raw-field -q --jq -t --template`),
		sub: true, cluster: true,
	}
	npmTool := &tool{
		anywhere: setOf(`--registry --prefix -C --userconfig --globalconfig
			--cache --loglevel -w --workspace --tag --otp --access --scope
			--before --omit --include --install-strategy`),
		sub: true, abbrev: true, cluster: true, abbrevSub: true, boolWords: true,
		aliases: map[string]string{
			"i": "install", "in": "install", "ins": "install", "inst": "install",
			"insta": "install", "instal": "install", "isnt": "install",
			"isnta": "install", "isntal": "install", "isntall": "install",
			"add": "install",
			"un":  "uninstall", "unlink": "uninstall", "remove": "uninstall",
			"rm": "uninstall", "r": "uninstall",
			"run": "run-script", "rum": "run-script", "urn": "run-script",
			"x": "exec",
			"t": "test", "tst": "test",
			"up": "update", "upgrade": "update", "udpate": "update",
			"ln":            "link",
			"c":             "config",
			"clean-install": "ci", "ic": "ci", "install-clean": "ci", "isntall-clean": "ci",
			"it":  "install-test",
			"cit": "install-ci-test", "sit": "install-ci-test",
			"clean-install-test": "install-ci-test",
			"info":               "view", "show": "view", "v": "view",
			"author":    "owner",
			"dist-tags": "dist-tag",
			"add-user":  "adduser",
		},
	}
	pnpmTool := &tool{
		anywhere: setOf(`-C --dir --filter -F --reporter --loglevel
			--workspace-dir --store-dir`),
		sub: true, cluster: true,
		aliases: map[string]string{
			"i": "install", "rm": "remove", "uninstall": "remove", "un": "remove",
			"up": "update", "upgrade": "update", "t": "test", "tst": "test",
			"run-script": "run",
		},
	}
	yarnTool := &tool{
		anywhere: setOf(`--cwd --modules-folder --cache-folder --mutex
			--network-timeout --registry --global-folder --link-folder`),
		sub: true, cluster: true,
	}
	cargoTool := &tool{
		before: setOf(`--config -C -Z --color --explain`),
		anywhere: setOf(`--manifest-path --target-dir -p --package -F
			--features --target -j --jobs --profile --bin --example --test
			--bench --registry --index --message-format`),
		sub: true, cluster: true, plus: true,
		aliases: map[string]string{
			"b": "build", "c": "check", "d": "doc", "t": "test", "r": "run", "rm": "remove",
		},
	}
	goTool := &tool{
		anywhere: setOf(`-C -o -p -tags -ldflags -gcflags -asmflags
			-gccgoflags -mod -modfile -overlay -pkgdir -exec -toolexec
			-buildmode -compiler -installsuffix -pgo -coverpkg -covermode
			-run -skip -bench -benchtime -count -cpu -timeout -parallel
			-fuzz -fuzztime -fuzzminimizetime -outputdir -coverprofile
			-cpuprofile -memprofile -blockprofile -mutexprofile -trace
			-shuffle -vet -f`),
		sub: true, dashes: true,
	}
	pipTool := &tool{
		anywhere: setOf(`--python --log --proxy --retries --timeout
			--exists-action --trusted-host --cert --client-cert --cache-dir
			--use-feature --use-deprecated --keyring-provider -r --requirement
			-c --constraint -e --editable -t --target -i --index-url
			--extra-index-url -f --find-links --prefix --root --src
			--upgrade-strategy --platform --python-version
			--implementation --abi --progress-bar --report`),
		sub: true, abbrev: true, cluster: true,
	}
	// ssh and the programs that connect through it (ssh(1), scp(1), sftp(1),
	// rsync(1)), and systemd's control programs (systemctl(1), loginctl(1)).
	sshTool := &tool{
		anywhere: setOf(`-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -P -p -Q -R -S -W -w`),
		cluster:  true, sub: true, host: true, stopAfter: 2,
	}
	scpTool := &tool{anywhere: setOf(`-c -D -F -i -J -l -o -P -S -X`), cluster: true}
	sftpTool := &tool{anywhere: setOf(`-B -b -c -D -F -i -J -l -o -P -R -S -s -X`), cluster: true}
	rsyncTool := &tool{
		anywhere: setOf(`-e --rsh --rsync-path -f --filter --exclude --include
			--exclude-from --include-from --files-from -T --temp-dir --backup-dir
			--suffix --chmod --chown --log-file --password-file -M --remote-option
			--compare-dest --copy-dest --link-dest --partial-dir --port --sockopts
			--out-format --log-file-format --bwlimit --max-size --min-size
			--timeout --contimeout --address --iconv --usermap --groupmap`),
		abbrev: true, cluster: true,
	}
	systemctlTool := &tool{
		anywhere: setOf(`-t --type -p --property -P --state --job-mode -s --signal
			--kill-whom --kill-value --root --image --image-policy -n --lines -o
			--output -H --host -M --machine --what --when --boot-loader-menu
			--boot-loader-entry --reboot-argument --preset-mode --timestamp
			--message --drop-in`),
		abbrev: true, cluster: true,
	}
	// The coreutils the block-device-write meaning reads: GNU getopt, so
	// options may come after the operands (cp img /dev/sda -S x).
	cpTool := &tool{
		anywhere: setOf(`-S --suffix -t --target-directory --no-preserve --sparse`),
		abbrev:   true, cluster: true,
	}
	installTool := &tool{
		anywhere: setOf(`-g --group -m --mode -o --owner -S --suffix -t
			--target-directory --strip-program`),
		abbrev: true, cluster: true,
	}
	truncateTool := &tool{anywhere: setOf(`-r --reference -s --size`), abbrev: true, cluster: true}
	shredTool := &tool{anywhere: setOf(`-n --iterations -s --size --random-source`), abbrev: true, cluster: true}
	loginctlTool := &tool{
		anywhere: setOf(`-p --property -s --signal -n --lines -o --output -H --host
			-M --machine --kill-whom --kill-whom`),
		abbrev: true, cluster: true,
	}
	return map[string]*tool{
		"git":       gitTool,
		"docker":    dockerTool,
		"podman":    podmanTool,
		"kubectl":   kubectlTool,
		"gh":        ghTool,
		"nerdctl":   nerdctlTool,
		"cp":        cpTool,
		"install":   installTool,
		"truncate":  truncateTool,
		"shred":     shredTool,
		"npm":       npmTool,
		"pnpm":      pnpmTool,
		"yarn":      yarnTool,
		"cargo":     cargoTool,
		"go":        goTool,
		"pip":       pipTool,
		"pip3":      pipTool,
		"ssh":       sshTool,
		"scp":       scpTool,
		"sftp":      sftpTool,
		"rsync":     rsyncTool,
		"systemctl": systemctlTool,
		"loginctl":  loginctlTool,
	}
})

// toolFor returns the table for program name (a base name), or the
// heuristic.
func toolFor(name string) *tool {
	if t, ok := builtinTools()[name]; ok {
		return t
	}
	if isVersioned(name, "pip") {
		return builtinTools()["pip"]
	}
	return heuristicTool
}

// isVersioned reports whether name is prefix followed by a version made of
// digits and dots (pip3.12, python3.12), or prefix itself.
func isVersioned(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	for _, c := range name[len(prefix):] {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// programAliases lists program names that are the same program under
// another name even when the files differ, so a rule naming one applies to
// the others.
var programAliases = map[string][]string{
	"pip":  {"pip3"},
	"pip3": {"pip"},
}

// toolSet holds the option tables a policy gives, by program name; nil
// means the built-in ones only.
type toolSet map[string]*tool

// get returns the table for program name: the policy's, else the built-in
// one, else the heuristic.
func (ts toolSet) get(name string) *tool {
	if t := ts[name]; t != nil {
		return t
	}
	return toolFor(name)
}

// newToolSet compiles a policy's option tables. A table for a program with
// a built-in one extends it: the policy can add options, never remove the
// ones cordon knows.
func newToolSet(defs map[string]ToolOptions) (toolSet, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	ts := toolSet{}
	for name, d := range defs {
		if err := checkToolOptions(name, d); err != nil {
			return nil, err
		}
		base := toolFor(name)
		t := *base
		t.before = union(base.before, d.Global)
		t.anywhere = union(base.anywhere, d.Values)
		t.sub = base.sub || d.Subcommands || len(d.Global) > 0
		ts[name] = &t
	}
	return ts, nil
}

// checkToolOptions checks one program's option table.
func checkToolOptions(name string, d ToolOptions) error {
	if name == "" || strings.ContainsAny(name, "/*?{}, \t") {
		return fmt.Errorf("programs: %q: want a program's name (no path, no glob)", name)
	}
	for _, l := range [][]string{d.Values, d.Global} {
		for _, o := range l {
			if len(o) < 2 || o[0] != '-' || o == "--" || strings.ContainsAny(o, "= \t") {
				return fmt.Errorf("programs: %s: %q is not an option name (want -x or --name, without =)", name, o)
			}
		}
	}
	return nil
}

func union(s set, add []string) set {
	out := set{}
	for k := range s {
		out[k] = true
	}
	for _, o := range add {
		out[o] = true
	}
	return out
}

// hostOf returns the host a destination word names: [user@]host,
// ssh://[user@]host[:port][/path], [user@][ipv6]. It does not allocate.
func hostOf(s string) string {
	scheme := false
	if i := strings.Index(s, "://"); i > 0 {
		s, scheme = s[i+3:], true
		if j := strings.IndexByte(s, '/'); j >= 0 {
			s = s[:j]
		}
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "[") {
		if j := strings.IndexByte(s, ']'); j > 0 {
			return s[1:j]
		}
	}
	if scheme {
		if j := strings.IndexByte(s, ':'); j >= 0 {
			s = s[:j]
		}
	}
	return s
}

// shortOpts holds "-c" for every byte c, so that the letters of a cluster
// can be looked up in a table without allocating.
var shortOpts = sync.OnceValue(func() *[256]string {
	var t [256]string
	for c := range t {
		t[c] = "-" + string(rune(c))
	}
	return &t
})

// clusterTakesValue reports whether the single-dash cluster s ("-vp")
// ends in a letter that takes the next argument as its value, as getopt
// reads it (-vvp 22). A letter before the last that takes a value takes the
// rest of the word instead, so nothing follows.
func (t *tool) clusterTakesValue(s string, beforeSub bool) bool {
	if !t.cluster || len(s) < 3 || s[0] != '-' || s[1] == '-' {
		return false
	}
	for j := 1; j < len(s); j++ {
		if t.takesValue(shortOpts()[s[j]], beforeSub) {
			return j == len(s)-1
		}
	}
	return false
}

// Warm builds the package's lazily made tables (lazySet and the like) now.
// The runner calls it on another goroutine while bubblewrap builds the
// sandbox, so that the first decision does not build them on the command's
// critical path; a process that never decides (the sandbox's init) never
// builds them.
func Warm() {
	builtinTools()
	shortOpts()
	gitBuiltins()
	gitCommon()
	gitCommandMasks()
	notDisks()
	powerUnitNames()
	startVerbs()
	powerMethods()
	shellNames()
	sshSafeConfig()
	loaderValueOpts()
	loaderFlagOpts()
}
