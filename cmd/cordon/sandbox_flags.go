package main

import (
	"fmt"
	"io"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/spf13/pflag"
)

// sandboxFlags describe a sandbox made through the daemon (a session, or
// the throwaway sandbox of "cordon exec"): the policy as "cordon run" loads
// it, the binds and the network. The working directory and the environment
// are the caller's.
type sandboxFlags struct {
	ruleFlags
	rw, ro []string
	net    string
}

func addSandboxFlags(fs *pflag.FlagSet, o *sandboxFlags) {
	addRuleFlags(fs, &o.ruleFlags)
	fs.StringArrayVar(&o.rw, "rw", nil, "bind PATH read-write into the sandbox (repeatable)")
	fs.StringArrayVar(&o.ro, "ro", nil, "bind PATH read-only into the sandbox (repeatable)")
	fs.StringVar(&o.net, "net", "host", "network: host or none")
}

// sandboxChanged reports whether any sandbox flag was given.
func sandboxChanged(fs *pflag.FlagSet) bool {
	for _, n := range []string{"policy", "deny", "allow", "default", "no-defaults", "deny-writable-exec", "deny-read", "deny-write", "rw", "ro", "net"} {
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
	doc, err := policyDocument(eff.cfg)
	if err != nil {
		return sandbox.SessionSpec{}, err
	}
	net := o.netFor(fs, eff)
	if _, err := bwrap.ParseNet(net); err != nil {
		return sandbox.SessionSpec{}, fmt.Errorf("--net: %w", err)
	}
	dir, err := currentDir()
	if err != nil {
		return sandbox.SessionSpec{}, err
	}
	return sandbox.SessionSpec{
		Dir: dir, Env: clientEnv(), Policy: doc,
		RW: absAll(o.rw), RO: absAll(o.ro), Net: net,
	}, nil
}

// netFor is the network mode: --net when given, else the policy file's
// net, else --net's default (host).
func (o *sandboxFlags) netFor(fs *pflag.FlagSet, eff *effectivePolicy) string {
	if !fs.Changed("net") && eff.cfg.Net != "" {
		return eff.cfg.Net
	}
	return o.net
}
