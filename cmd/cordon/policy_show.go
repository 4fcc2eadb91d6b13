//go:build cgo

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/spf13/cobra"
)

// policyShowOptions holds the flags of "cordon policy show".
type policyShowOptions struct {
	ruleFlags
	json bool
}

func newPolicyShowCmd() *cobra.Command {
	opts := &policyShowOptions{}
	cmd := &cobra.Command{
		Use:   "show [flags]",
		Short: "Print the effective policy and where each part came from",
		Long: `show prints the policy "cordon run" would enforce here with the same flags:
which file was loaded (or the built-in default), the default decision and
the built-in deny list and what set them, then every rule in evaluation
order with its source: file:line, --deny, --allow or builtin.

Rule flags change what was loaded as they do for a run: --deny and --allow
rules come after the file's, --env-deny and --env-pass patterns after the
file's env section, --allow-net and --deny-net after its network rules;
--default and --no-defaults, when given, replace the file's default and
defaults (which also switch the built-in credential names of the
environment scrub on or off).`,
		Example: `  cordon policy show
  cordon policy show --allow-net registry.npmjs.org --deny-net '*.evil.example'
  cordon policy show --policy fence.json
  cordon policy show --env-pass GITHUB_TOKEN --json | jq .env
  cordon policy show --default deny --allow "git status" --json | jq '.rules[] | select(.source != "builtin")'`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return opts.run(cmd)
		},
	}
	addRuleFlags(cmd.Flags(), &opts.ruleFlags)
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the policy as JSON")
	return cmd
}

// shownPolicy is "cordon policy show --json".
type shownPolicy struct {
	// File is the policy file loaded, or "" for the built-in default.
	File   string `json:"file"`
	Origin string `json:"origin"`
	// Trusted is false for a discovered file a run would refuse (not
	// trusted with "cordon policy trust", or changed since).
	Trusted      bool        `json:"trusted"`
	Format       string      `json:"format"`
	Default      string      `json:"default"`
	DefaultFrom  string      `json:"default_from"`
	Builtins     bool        `json:"builtins"`
	BuiltinsFrom string      `json:"builtins_from"`
	Rules        []shownRule `json:"rules"`
	Examples     int         `json:"examples"`
	// Network is "host" (no network section: the host's network unless
	// --net says otherwise) or "filter"; NetRules are its rules.
	Network  string         `json:"network"`
	NetRules []shownNetRule `json:"net_rules"`
	// Env is the environment scrub: names removed from the sandbox's
	// environment (built-in credential names first) and names kept anyway.
	Env   shownEnv   `json:"env"`
	Net   string     `json:"net,omitempty"`
	Files shownFiles `json:"files"`
}

type shownEnv struct {
	Deny []shownEnvRule `json:"deny"`
	Pass []shownEnvRule `json:"pass"`
}

type shownEnvRule struct {
	Pattern string `json:"pattern"`
	Source  string `json:"source"`
	Why     string `json:"why,omitempty"`
}

type shownNetRule struct {
	Decision string   `json:"decision"`
	Host     string   `json:"host"`
	Ports    string   `json:"ports"`
	For      []string `json:"for,omitempty"`
	Message  string   `json:"message,omitempty"`
	Source   string   `json:"source"`
}

// shownFiles is the files part in force: built-in rules first (when the
// built-in list is on), then the file's, then the flags'.
type shownFiles struct {
	DenyRead   []shownFileRule `json:"deny_read"`
	DenyWrite  []shownFileRule `json:"deny_write"`
	AllowWrite []string        `json:"allow_write,omitempty"`
	ReadOnly   []string        `json:"read_only,omitempty"`
	Writable   []string        `json:"writable,omitempty"`
}

type shownFileRule struct {
	Pattern string `json:"pattern"`
	Source  string `json:"source"`
	Why     string `json:"why,omitempty"`
}

type shownRule struct {
	Decision string `json:"decision"`
	Pattern  string `json:"pattern"`
	Message  string `json:"message,omitempty"`
	Source   string `json:"source"`
	// Override marks a fence allow rule, which wins over deny rules.
	Override bool `json:"override,omitempty"`
	// Final marks a fence ssh deny, which wins over overrides too.
	Final bool `json:"final,omitempty"`
}

func (o *policyShowOptions) run(cmd *cobra.Command) error {
	eff, err := o.loadPolicy(cmd.Flags(), cmd.ErrOrStderr(), forShow)
	if err != nil {
		return err
	}
	s := shownPolicy{
		File:         eff.loaded.Path,
		Origin:       string(eff.loaded.Origin),
		Trusted:      eff.loaded.Trusted,
		Format:       string(eff.loaded.File.Format),
		Default:      eff.cfg.Default.String(),
		DefaultFrom:  eff.defaultFrom,
		Builtins:     eff.cfg.Builtins,
		BuiltinsFrom: eff.defaultsFrom,
		Rules:        []shownRule{},
		Examples:     len(eff.loaded.File.Config.Examples),
	}
	s.Env = shownEnv{Deny: []shownEnvRule{}, Pass: []shownEnvRule{}}
	env := eff.pol.Env()
	for _, r := range env.Deny {
		s.Env.Deny = append(s.Env.Deny, shownEnvRule{Pattern: r.Pattern, Source: r.Source, Why: r.Why})
	}
	for _, r := range env.Pass {
		s.Env.Pass = append(s.Env.Pass, shownEnvRule{Pattern: r.Pattern, Source: r.Source})
	}
	for _, r := range eff.pol.Rules() {
		s.Rules = append(s.Rules, shownRule{Decision: r.Decision.String(), Pattern: r.Pattern,
			Message: r.Message, Source: r.Source, Override: r.Override, Final: r.Final})
	}
	s.Network, s.NetRules = "host", []shownNetRule{}
	if np := eff.pol.Network(); np != nil {
		s.Network = "filter"
		for _, r := range np.Rules() {
			ports := "80,443"
			switch {
			case r.AnyPort:
				ports = "any"
			case len(r.Ports) > 0:
				ports = fmt.Sprint(r.Ports[0])
			}
			s.NetRules = append(s.NetRules, shownNetRule{Decision: r.Decision.String(), Host: r.Host,
				Ports: ports, For: r.For, Message: r.Message, Source: r.Source})
		}
	}
	fp := eff.pol.FilePolicy()
	s.Net = eff.cfg.Net
	s.Files = shownFiles{DenyRead: []shownFileRule{}, DenyWrite: []shownFileRule{},
		AllowWrite: fp.AllowWrite, ReadOnly: fp.ReadOnly, Writable: fp.Writable}
	for _, r := range fp.DenyRead {
		s.Files.DenyRead = append(s.Files.DenyRead, shownFileRule{Pattern: r.Pattern, Source: r.Source, Why: r.Why})
	}
	for _, r := range fp.DenyWrite {
		s.Files.DenyWrite = append(s.Files.DenyWrite, shownFileRule{Pattern: r.Pattern, Source: r.Source, Why: r.Why})
	}
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			return fmt.Errorf("writing policy: %w", err)
		}
		return nil
	}
	onOff := map[bool]string{true: "on", false: "off"}
	fmt.Fprintf(out, "policy:   %s\n", eff.loaded)
	fmt.Fprintf(out, "trust:    %s\n", trustLabel(eff.loaded))
	fmt.Fprintf(out, "default:  %s (from %s)\n", s.Default, s.DefaultFrom)
	fmt.Fprintf(out, "built-in deny list: %s (from %s)\n", onOff[s.Builtins], s.BuiltinsFrom)
	if s.Examples > 0 {
		fmt.Fprintf(out, "examples: %d (cordon policy test runs them)\n", s.Examples)
	}
	if err := printEnv(out, s.Env); err != nil {
		return err
	}
	if s.Net != "" {
		fmt.Fprintf(out, "net:      %s (the policy file's net key; --net overrides it)\n", s.Net)
	}
	if len(s.Rules) == 0 {
		fmt.Fprintln(out, "rules:    none")
	} else {
		fmt.Fprintln(out, "rules, in evaluation order (the strictest match wins):")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, r := range s.Rules {
			dec := r.Decision
			if r.Override {
				dec += " (override)"
			}
			if r.Final {
				dec += " (final)"
			}
			line := fmt.Sprintf("  %s\t%s\t%s", r.Source, dec, r.Pattern)
			if r.Message != "" {
				line += "  # " + r.Message
			}
			fmt.Fprintln(tw, line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "files (deny_read: EACCES; deny_write: read-only inside the writable trees, bare names refused when created):")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, list := range []struct {
		what  string
		rules []shownFileRule
	}{{"deny_read", s.Files.DenyRead}, {"deny_write", s.Files.DenyWrite}} {
		for _, r := range list.rules {
			line := fmt.Sprintf("  %s\t%s\t%s", r.Source, list.what, r.Pattern)
			if r.Why != "" {
				line += "  # " + r.Why
			}
			fmt.Fprintln(tw, line)
		}
	}
	for _, p := range s.Files.AllowWrite {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", "file", "allow_write", p)
	}
	for _, p := range s.Files.ReadOnly {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", "file", "read_only", p)
	}
	fmt.Fprintf(tw, "  %s\t%s\t%s  # %s\n", "builtin", "private", strings.Join(runner.PrivateState(), ", "),
		"writable in the sandbox, empty, discarded at exit (when they exist)")
	for _, p := range s.Files.Writable {
		fmt.Fprintf(tw, "  %s\t%s\t%s  # %s\n", "file", "writable", p, strings.Join(policy.Presets[p], ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.Network == "host" {
		fmt.Fprintln(out, "network:  no network rules (the host's network unless --net none or filter)")
		return nil
	}
	if len(s.NetRules) == 0 {
		fmt.Fprintln(out, "network:  filter, no rule: every outbound connection is denied")
		return nil
	}
	fmt.Fprintln(out, "network:  filter; rules (deny wins over ask over allow; nothing matching is denied):")
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, r := range s.NetRules {
		line := fmt.Sprintf("  %s\t%s\t%s\tports %s", r.Source, r.Decision, r.Host, r.Ports)
		if len(r.For) > 0 {
			line += "\tfor " + strings.Join(r.For, ",")
		}
		if r.Message != "" {
			line += "  # " + r.Message
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// printEnv prints the environment scrub: what is removed, what is kept.
func printEnv(out io.Writer, env shownEnv) error {
	if len(env.Deny) == 0 {
		fmt.Fprintln(out, "environment: nothing removed")
		return nil
	}
	fmt.Fprintln(out, "environment: variables removed from the sandbox (unless kept below):")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, r := range env.Deny {
		line := fmt.Sprintf("  %s\t%s", r.Source, r.Pattern)
		if r.Why != "" {
			line += "  # " + r.Why
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(env.Pass) > 0 {
		fmt.Fprintln(out, "environment: kept even when matched above:")
		for _, r := range env.Pass {
			fmt.Fprintf(tw, "  %s\t%s\n", r.Source, r.Pattern)
		}
	}
	return tw.Flush()
}
