//go:build cgo

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/config"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// ruleFlags are the policy flags shared by "cordon run", the root shorthand,
// "cordon policy check" and "cordon policy show".
type ruleFlags struct {
	file              string
	deny, allow       []string
	denyNet, allowNet []string
	def               string
	noDefaults        bool
	noWritable        bool
	envFlags
	// denyRead and denyWrite are path patterns added after the policy
	// file's files.deny_read and files.deny_write.
	denyRead, denyWrite []string
}

func addRuleFlags(fs *pflag.FlagSet, o *ruleFlags) {
	fs.StringVar(&o.file, "policy", "", "policy file (YAML, JSON, a fence config or a codex .rules file), trusted by being named; default: cordon.yaml or .cordon.yaml in this directory or a parent up to the repository root, then $XDG_CONFIG_HOME/cordon/policy.yaml, each only once trusted (cordon policy trust)")
	fs.StringArrayVar(&o.deny, "deny", nil, "deny execs matching RULE (repeatable), e.g. --deny \"git push\"")
	fs.StringArrayVar(&o.allow, "allow", nil, "allow execs matching RULE (repeatable); strict: the command may hold only the words and options RULE names. A bare name (--allow ls) allows the program of that name on the sandbox's PATH or a copy of it, not any file so named, and not one in a PATH directory the sandbox can write (.venv/bin, node_modules/.bin): allow those by path (--allow /opt/tools/bin/gen); python -m MOD never gets MOD's allow (allow 'python3 -P -m pip ...' itself)")
	fs.StringArrayVar(&o.allowNet, "allow-net", nil, "allow connections to HOST[:PORT] through cordon's proxy (repeatable; implies --net filter): *.example.com = subdomains only, * = any public host, no port = 80 and 443, HOST:* = any port")
	fs.StringArrayVar(&o.denyNet, "deny-net", nil, "deny connections to HOST[:PORT] (repeatable; implies --net filter); deny wins over allow")
	fs.StringVar(&o.def, "default", "allow", "decision when no rule matches: allow, deny (allowlist mode) or ask; overrides the policy file's")
	fs.BoolVar(&o.noDefaults, "no-defaults", false, "do not apply the built-in deny list of destructive system commands; overrides the policy file's")
	fs.StringArrayVar(&o.denyRead, "deny-read", nil, "make PATH unreadable in the sandbox (EACCES; repeatable): absolute, ~/..., or a glob inside the writable trees such as '**/.env*'")
	fs.StringArrayVar(&o.denyWrite, "deny-write", nil, "make PATH inside the writable trees read-only (repeatable; a bare name such as .claude is also refused when created)")
	fs.BoolVar(&o.noWritable, "deny-writable-exec", false, "refuse programs on a writable mount (the working directory, /tmp, --rw paths) or in memory (memfd): what the workload could have written itself; overrides the policy file's deny_writable_exec")
	addEnvFlags(fs, &o.envFlags)
}

// effectivePolicy is the policy a run enforces: the loaded file (or the
// built-in default) with the rule flags applied on top.
type effectivePolicy struct {
	loaded *config.Loaded
	cfg    policy.Config
	pol    *policy.Policy
	// defaultFrom and defaultsFrom say what set cfg.Default and
	// cfg.Builtins: a file, "--default"/"--no-defaults", or the built-in
	// default.
	defaultFrom, defaultsFrom string
}

// loadPolicy loads the policy file (--policy, else discovery), checks the
// file's examples against the file alone, then applies the rule flags:
//
//   - --deny and --allow rules are appended after the file's rules, and
//     --env-deny and --env-pass patterns after the file's env section;
//   - --default and --no-defaults replace the file's default and defaults
//     only when given on the command line (fs.Changed).
//
// Discovery and file warnings go to warn as "cordon: warning: ...".
func (o *ruleFlags) loadPolicy(fs *pflag.FlagSet, warn io.Writer, use trustUse) (_ *effectivePolicy, err error) {
	defer func() {
		if err != nil {
			err = &policyError{err: err}
		}
	}()
	l, err := loadPolicyFile(o.file, warn, use)
	if err != nil {
		return nil, err
	}
	// The examples describe the file: check them before the flags change
	// what the file says, so an extra --deny does not break a run.
	if nw := l.File.Config.Network; len(l.File.Config.Examples) > 0 || len(l.File.Config.Files.Examples) > 0 || (nw != nil && len(nw.Examples) > 0) {
		if _, err := policy.Compile(l.Config()); err != nil {
			return nil, err
		}
	}
	e := &effectivePolicy{loaded: l, cfg: l.Config()}
	e.cfg.Rules = append([]policy.Rule(nil), e.cfg.Rules...)
	e.cfg.Examples = nil
	e.defaultFrom = policyLabel(l)
	e.defaultsFrom = e.defaultFrom
	if fs.Changed("default") {
		d, err := policy.ParseDecision(o.def)
		if err != nil {
			return nil, fmt.Errorf("--default: %w", err)
		}
		e.cfg.Default, e.defaultFrom = d, "--default"
	}
	if fs.Changed("no-defaults") {
		e.cfg.Builtins, e.defaultsFrom = !o.noDefaults, "--no-defaults"
	}
	if fs.Changed("deny-writable-exec") {
		e.cfg.DenyWritable = o.noWritable
	}
	for _, r := range o.deny {
		e.cfg.Rules = append(e.cfg.Rules, policy.Rule{Decision: policy.Deny, Pattern: r, Source: "--deny"})
	}
	for _, r := range o.allow {
		e.cfg.Rules = append(e.cfg.Rules, policy.Rule{Decision: policy.Allow, Pattern: r, Source: "--allow"})
	}
	e.cfg.Env = o.envFlags.apply(e.cfg.Env)
	if len(o.allowNet)+len(o.denyNet) > 0 {
		nw := &policy.Network{}
		if e.cfg.Network != nil {
			nw.Rules = append(nw.Rules, e.cfg.Network.Rules...)
		}
		for _, list := range []struct {
			d     policy.Decision
			flag  string
			rules []string
		}{{policy.Deny, "--deny-net", o.denyNet}, {policy.Allow, "--allow-net", o.allowNet}} {
			for _, text := range list.rules {
				r, err := policy.ParseNetRule(list.d, text)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", list.flag, err)
				}
				r.Source = list.flag
				nw.Rules = append(nw.Rules, r)
			}
		}
		e.cfg.Network = nw
	} else if e.cfg.Network != nil {
		nw := *e.cfg.Network
		nw.Examples = nil
		e.cfg.Network = &nw
	}
	// --deny-read and --deny-write come after the file's files rules. ~
	// stays as written: the runner expands it with the caller's HOME (a
	// session's too: its environment is the caller's).
	files := &e.cfg.Files
	files.Examples = nil
	files.DenyRead = append([]policy.FileRule(nil), files.DenyRead...)
	files.DenyWrite = append([]policy.FileRule(nil), files.DenyWrite...)
	for _, list := range []struct {
		flags []string
		flag  string
		out   *[]policy.FileRule
	}{{o.denyRead, "--deny-read", &files.DenyRead}, {o.denyWrite, "--deny-write", &files.DenyWrite}} {
		for _, p := range list.flags {
			if err := policy.CheckFilePattern(p); err != nil {
				return nil, fmt.Errorf("%s: %w", list.flag, err)
			}
			*list.out = append(*list.out, policy.FileRule{Pattern: p, Source: list.flag})
		}
	}
	// The policy file in use decides this run and the next: it is
	// protected wherever it lies in a writable tree, like the files
	// discovery would load.
	if l.Origin != config.OriginBuiltin && l.Path != "" && filepath.IsAbs(l.Path) {
		files.DenyWrite = append(files.DenyWrite, policy.FileRule{Pattern: policy.LiteralPattern(l.Path), Source: policyFileInUse})
	}
	if e.pol, err = policy.Compile(e.cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// policyFileInUse is the source of the deny_write rule cordon adds for the
// policy file a run loaded.
const policyFileInUse = "policy file in use"

// policyError is a policy that could not be loaded: a file that does not
// parse or whose examples fail, a rule flag that does not compile, an
// untrusted file. Its message says where; it is not the host's fault.
type policyError struct{ err error }

func (e *policyError) Error() string { return e.err.Error() }
func (e *policyError) Unwrap() error { return e.err }

// trustUse says what a command does with a discovered policy file that is
// not trusted.
type trustUse int

const (
	// forRun: the file would decide what runs; refuse it, or ask on the
	// terminal when there is one.
	forRun trustUse = iota
	// forShow: the command only shows or checks the policy; load it and
	// say it is not trusted.
	forShow
)

// loadPolicyFile loads file, or the policy that discovery finds when file
// is empty, and prints discovery and file warnings to warn. A discovered
// file must be trusted (config.TrustStore) before it decides a run: on a
// terminal the user is asked, and a yes is recorded; otherwise the
// *config.UntrustedError says what to do (exit 125).
func loadPolicyFile(file string, warn io.Writer, use trustUse) (*config.Loaded, error) {
	dir, err := currentDir()
	if err != nil {
		return nil, err
	}
	opts := config.Options{PolicyFile: file, Dir: dir, AllowUntrusted: use == forShow}
	l, err := config.Load(opts)
	var ue *config.UntrustedError
	if errors.As(err, &ue) && promptTrust(ue) {
		store, serr := config.TrustStoreFor(opts)
		if serr != nil {
			return nil, serr
		}
		if serr := store.Trust(ue.Path, ue.Sum); serr != nil {
			return nil, serr
		}
		// Loaded again: if the file changed since it was shown, the
		// recorded sum does not match and it is refused.
		l, err = config.Load(opts)
	}
	if l != nil {
		for _, w := range l.Warnings {
			fmt.Fprintf(warn, "cordon: warning: %s\n", w)
		}
		if l.File != nil {
			for _, n := range l.File.Notices {
				fmt.Fprintf(warn, "cordon: notice: %s\n", n)
			}
		}
		if err == nil && !l.Trusted {
			fmt.Fprintf(warn, "cordon: warning: %s is not trusted: a run refuses it until you review it and run \"cordon policy trust %s\"\n", l.Path, l.Path)
		}
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// promptTrust asks on the terminal whether to trust ue's file, when
// cordon's stdin and stderr are both a terminal. Anything but y or yes is
// no.
func promptTrust(ue *config.UntrustedError) bool {
	if !isTerminal(os.Stdin) || !isTerminal(os.Stderr) {
		return false
	}
	fmt.Fprint(os.Stderr, "cordon: "+ue.Question())
	// One byte at a time: nothing past the answer's line is taken from the
	// command's stdin.
	var line []byte
	b := make([]byte, 1)
	for len(line) < 64 {
		n, err := os.Stdin.Read(b)
		if n == 0 || err != nil || b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	switch strings.ToLower(strings.TrimSpace(string(line))) {
	case "y", "yes":
		return true
	}
	return false
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// trustLabel says whether the loaded policy is trusted, for show and
// --debug.
func trustLabel(l *config.Loaded) string {
	switch {
	case l.Origin == config.OriginBuiltin:
		return "built in"
	case l.Origin == config.OriginFlag:
		return "trusted: named with --policy"
	case l.Trusted:
		return "trusted"
	}
	return "NOT trusted: a run refuses it; review it, then cordon policy trust " + l.Path
}

// policyLabel names where a loaded policy came from, for messages: the
// file's path, or "built-in default".
func policyLabel(l *config.Loaded) string {
	if l.Origin == config.OriginBuiltin {
		return "built-in default"
	}
	return l.Path
}
