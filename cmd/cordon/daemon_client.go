//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/cordon-sandbox/cordon/client"
	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/cordon-sandbox/cordon/supervisor"
	"go.yaml.in/yaml/v3"
)

// The daemon's client commands (session, exec, start, ps, logs, wait, kill,
// daemon) share these helpers.

// commandContext ends on SIGINT or SIGTERM: a request in flight is
// cancelled, and the daemon ends what it was running for this client
// (exec) or leaves it running (a started process).
func commandContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// connectDaemon returns a client of the user's daemon, starting the daemon
// when none runs.
func connectDaemon(ctx context.Context) (*client.Client, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding cordon's own binary: %w", err)
	}
	c, _, err := daemon.Connect(ctx, daemon.ConnectOptions{AutoStart: true, Start: daemon.StartOptions{Exe: exe}})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// interrupted tells a request the user cancelled (errInterrupted) from
// any other failure.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return errInterrupted
	}
	return failed(err)
}

// clientEnv is the caller's environment for a sandbox. The runner strips
// cordon's own variables from every workload's environment; stripping them
// here too keeps CORDON_TOKEN off the wire.
func clientEnv() []string { return runner.WorkloadEnv(os.Environ()) }

// policyDocument renders an effective policy as a cordon policy document,
// for the daemon (which compiles it itself). Examples were checked when it
// was loaded and are left out.
func policyDocument(cfg policy.Config) (string, error) {
	type rule struct {
		Deny    string `yaml:"deny,omitempty"`
		Allow   string `yaml:"allow,omitempty"`
		Ask     string `yaml:"ask,omitempty"`
		Message string `yaml:"message,omitempty"`
	}
	type env struct {
		Deny []string `yaml:"deny,omitempty"`
		Pass []string `yaml:"pass,omitempty"`
	}
	type netRule struct {
		Deny    string   `yaml:"deny,omitempty"`
		Allow   string   `yaml:"allow,omitempty"`
		Ask     string   `yaml:"ask,omitempty"`
		For     []string `yaml:"for,omitempty"`
		Message string   `yaml:"message,omitempty"`
	}
	type network struct {
		Rules []netRule `yaml:"rules"`
	}
	type files struct {
		DenyRead   []string `yaml:"deny_read,omitempty"`
		DenyWrite  []string `yaml:"deny_write,omitempty"`
		AllowWrite []string `yaml:"allow_write,omitempty"`
		ReadOnly   []string `yaml:"read_only,omitempty"`
		Writable   []string `yaml:"writable,omitempty"`
	}
	doc := struct {
		Version      int      `yaml:"version"`
		Default      string   `yaml:"default"`
		Defaults     bool     `yaml:"defaults"`
		DenyWritable bool     `yaml:"deny_writable_exec"`
		Net          string   `yaml:"net,omitempty"`
		Files        *files   `yaml:"files,omitempty"`
		Env          *env     `yaml:"env,omitempty"`
		Rules        []rule   `yaml:"rules"`
		Network      *network `yaml:"network,omitempty"`
		// Programs carries the policy's option tables: without them the
		// daemon would read the same rules with other meanings.
		Programs map[string]policy.ToolOptions `yaml:"programs,omitempty"`
	}{Version: 1, Default: cfg.Default.String(), Defaults: cfg.Builtins, DenyWritable: cfg.DenyWritable, Net: cfg.Net, Rules: []rule{}, Programs: cfg.Tools}
	if len(cfg.Env.Deny)+len(cfg.Env.Pass) > 0 {
		// The built-in names are not written out: defaults carries them,
		// and the daemon adds them as it compiles.
		doc.Env = &env{}
		for _, r := range cfg.Env.Deny {
			doc.Env.Deny = append(doc.Env.Deny, r.Pattern)
		}
		for _, r := range cfg.Env.Pass {
			doc.Env.Pass = append(doc.Env.Pass, r.Pattern)
		}
	}
	if cfg.Network != nil {
		// A network section, even empty, means a filtered network.
		doc.Network = &network{Rules: []netRule{}}
		for _, r := range cfg.Network.Rules {
			out := netRule{For: r.For, Message: r.Message}
			switch r.Decision {
			case policy.Deny:
				out.Deny = r.Pattern
			case policy.Allow:
				out.Allow = r.Pattern
			case policy.Ask:
				out.Ask = r.Pattern
			}
			doc.Network.Rules = append(doc.Network.Rules, out)
		}
	}
	// The built-in files rules are not written out: defaults carries them.
	f := files{AllowWrite: cfg.Files.AllowWrite, ReadOnly: cfg.Files.ReadOnly, Writable: cfg.Files.Writable}
	for _, r := range cfg.Files.DenyRead {
		f.DenyRead = append(f.DenyRead, r.Pattern)
	}
	for _, r := range cfg.Files.DenyWrite {
		f.DenyWrite = append(f.DenyWrite, r.Pattern)
	}
	if f.DenyRead != nil || f.DenyWrite != nil || f.AllowWrite != nil || f.ReadOnly != nil || f.Writable != nil {
		doc.Files = &f
	}
	for _, r := range cfg.Rules {
		if r.Override || r.Final {
			return "", fmt.Errorf("rule %s (%s) overrides deny rules, which only a fence config can say; the daemon takes cordon's format: rewrite it as a cordon policy", r.String(), r.Source)
		}
		out := rule{Message: r.Message}
		switch r.Decision {
		case policy.Deny:
			out.Deny = r.Pattern
		case policy.Allow:
			out.Allow = r.Pattern
		case policy.Ask:
			out.Ask = r.Pattern
		}
		doc.Rules = append(doc.Rules, out)
	}
	b, err := yaml.Marshal(doc)
	return string(b), err
}

// printDecisions prints a line per denied exec, as "cordon run" does
// (supervisor.DenialLine): the argv is the workload's to choose, so it is
// shown through supervisor.FormatArgv, quoted where it holds spaces or
// control characters, and can neither span lines nor reach the terminal as
// escape sequences.
func printDecisions(w io.Writer, ds []sandbox.ExecDecision) {
	for _, d := range ds {
		if line := denialLine(d); line != "" {
			fmt.Fprintln(w, line)
		}
	}
}

// denialLine is the line printDecisions prints for d, or "" when d is not
// a denial.
func denialLine(d sandbox.ExecDecision) string {
	switch {
	case d.Decision != "deny":
		return ""
	case d.Kind == "net":
		by := "an unidentified process"
		if len(d.Argv) > 0 {
			by = supervisor.FormatArgv(d.Argv)
		}
		return fmt.Sprintf("cordon: denied: connect %s by %s (rule: %s)",
			net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), by, d.Rule)
	}
	return fmt.Sprintf("cordon: denied: %s (rule: %s)", supervisor.FormatArgv(d.Argv), d.Rule)
}

// printJSON prints v indented. Like the daemon's answers, it does not
// escape <, > and & (a command's output is printed as it is).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// describeExit is one line for a process's exit.
func describeExit(e sandbox.ExitInfo) string {
	var parts []string
	switch {
	case e.Signal != 0:
		parts = append(parts, fmt.Sprintf("killed by signal %d", e.Signal))
	default:
		parts = append(parts, fmt.Sprintf("exit code %d", e.ExitCode))
	}
	if e.TimedOut {
		parts = append(parts, "timed out")
	}
	if e.KillRequested {
		parts = append(parts, "kill requested")
	}
	if e.Denied {
		parts = append(parts, "denied by policy")
	}
	if e.Error != "" && !e.Denied {
		parts = append(parts, e.Error)
	}
	return strings.Join(parts, ", ")
}
