//go:build cgo

package main

import (
	"fmt"
	"io"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/spf13/pflag"
)

// sandboxFlags describe a sandbox made through the daemon (a session, or
// the throwaway sandbox of "cordon exec"): the policy as "cordon run" loads
// it, the binds and the network. The working directory and the environment
// are the caller's.
type sandboxFlags struct {
	ruleFlags
	rw, ro    []string
	net       string
	isolation string
}

// isolationUsage is --isolation's help, shared by run, exec and session
// create.
const isolationUsage = "how the command is confined: auto (bwrap when bubblewrap works here, else landlock, saying so once; " +
	"a probe that succeeded is remembered in ~/.cache/cordon/bwrap-probe until the host changes), " +
	"bwrap (namespaces: the full sandbox), landlock (no namespaces: writes only in the working directory, --rw paths " +
	"and a private TMPDIR; Linux 5.13+; auto does not pick it for root), or none (exec policy only, no sandbox: prints a warning)"

func addSandboxFlags(fs *pflag.FlagSet, o *sandboxFlags) {
	addRuleFlags(fs, &o.ruleFlags)
	fs.StringArrayVar(&o.rw, "rw", nil, "bind PATH read-write into the sandbox (repeatable); a PATH through a symlink is bound where it leads; refused (exit 125) when PATH is or lies inside what a deny rule covers, such as another repository's .git/hooks, any git directory's config, a .vscode or .claude, and, run by root, when PATH is or holds a system directory cordon takes bubblewrap from (/usr/bin, /usr/sbin, /bin, /sbin)")
	fs.StringArrayVar(&o.ro, "ro", nil, "bind PATH read-only into the sandbox (repeatable)")
	fs.StringVar(&o.net, "net", "host", "network: host, none (loopback only) or filter (loopback, and cordon's proxy as the only way out, deciding every connection by the network rules: --allow-net, --deny-net, the policy's network section); a policy with network rules means filter")
	fs.StringVar(&o.isolation, "isolation", "auto", isolationUsage)
}

// sandboxChanged reports whether any sandbox flag was given.
func sandboxChanged(fs *pflag.FlagSet) bool {
	for _, n := range []string{"policy", "deny", "allow", "default", "no-defaults", "deny-writable-exec", "deny-read", "deny-write", "env-deny", "env-pass", "rw", "ro", "net", "allow-net", "deny-net", "isolation"} {
		if fs.Changed(n) {
			return true
		}
	}
	return false
}

// spec loads the policy (file discovery and flags, as "cordon run" does) and
// returns the sandbox's spec: the current directory writable, the caller's
// environment without CORDON_* variables.
func (o *sandboxFlags) spec(fs *pflag.FlagSet, warn io.Writer) (sandbox.SessionSpec, error) {
	eff, err := o.loadPolicy(fs, warn, forRun)
	if err != nil {
		return sandbox.SessionSpec{}, err
	}
	return o.specWith(fs, eff)
}

// specWith is spec with the policy already loaded (cordon hook decides
// with the same load it gives the session).
func (o *sandboxFlags) specWith(fs *pflag.FlagSet, eff *effectivePolicy) (sandbox.SessionSpec, error) {
	netMode, err := o.netMode(fs, eff)
	if err != nil {
		return sandbox.SessionSpec{}, err
	}
	doc, err := policy.Document(eff.cfg)
	if err != nil {
		return sandbox.SessionSpec{}, err
	}
	iso, err := runner.ParseIsolation(o.isolation)
	if err != nil {
		return sandbox.SessionSpec{}, fmt.Errorf("--isolation: %w", err)
	}
	dir, err := currentDir()
	if err != nil {
		return sandbox.SessionSpec{}, err
	}
	return sandbox.SessionSpec{
		Dir: dir, Env: clientEnv(), Policy: doc,
		RW: absAll(o.rw), RO: absAll(o.ro), Net: string(netMode), Isolation: string(iso),
	}, nil
}

// envFlags are the environment scrub's flags. They fold into the policy's
// env section (policy.Config.Env), so that a session gets them with its
// policy document, and "cordon policy show" lists them.
type envFlags struct {
	envDeny, envPass []string
}

func addEnvFlags(fs *pflag.FlagSet, o *envFlags) {
	fs.StringArrayVar(&o.envDeny, "env-deny", nil, "remove environment variables whose name matches PATTERN from the sandbox (repeatable; * matches any run of characters), e.g. --env-deny '*_TOKEN'")
	fs.StringArrayVar(&o.envPass, "env-pass", nil, "keep the environment variable NAME (or PATTERN) even when a deny pattern or the built-in credential list removes it (repeatable), e.g. --env-pass GITHUB_TOKEN")
}

// apply appends the flags' patterns to env, after the policy file's.
func (o *envFlags) apply(env policy.EnvConfig) policy.EnvConfig {
	out := policy.EnvConfig{
		Deny: append([]policy.EnvRule(nil), env.Deny...),
		Pass: append([]policy.EnvRule(nil), env.Pass...),
	}
	for _, p := range o.envDeny {
		out.Deny = append(out.Deny, policy.EnvRule{Pattern: p, Source: "--env-deny"})
	}
	for _, p := range o.envPass {
		out.Pass = append(out.Pass, policy.EnvRule{Pattern: p, Source: "--env-pass"})
	}
	return out
}

// netMode checks --net against the network rules and folds --net filter
// into the policy: a filtered sandbox with no rule has an empty network
// section (nothing goes out), so one-shot runs and sessions (which get the
// policy as a document) see the same thing. Empty means the default: the
// host's network, or filter when the policy has network rules.
//
// The mode asked for is --net when given, else the policy file's net key.
func (o *sandboxFlags) netMode(fs *pflag.FlagSet, eff *effectivePolicy) (bwrap.Net, error) {
	text, from := o.net, "--net"
	if !fs.Changed("net") {
		if eff.cfg.Net == "" {
			return "", nil
		}
		text, from = eff.cfg.Net, policyLabel(eff.loaded)+": net"
	}
	mode, err := bwrap.ParseNet(text)
	if err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	switch {
	case mode == bwrap.NetHost && eff.cfg.Network != nil:
		return "", fmt.Errorf("%s host: the policy has network rules (%s), which only --net filter enforces: drop net host, or the rules", from, netRulesFrom(eff))
	case mode == bwrap.NetFilter && eff.cfg.Network == nil:
		eff.cfg.Network = &policy.Network{}
		if eff.pol, err = policy.Compile(eff.cfg); err != nil {
			return "", err
		}
	}
	return mode, nil
}

// netRulesFrom says where the network rules came from.
func netRulesFrom(eff *effectivePolicy) string {
	if rules := eff.cfg.Network.Rules; len(rules) > 0 {
		return rules[0].Source
	}
	return policyLabel(eff.loaded)
}
