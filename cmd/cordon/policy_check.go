//go:build cgo

package main

import (
	"fmt"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"github.com/spf13/cobra"
)

// Exit codes of "cordon policy check": one per decision.
const (
	exitCheckDeny = 1
	exitCheckAsk  = 2
)

// policyCheckOptions holds the flags of "cordon policy check".
type policyCheckOptions struct {
	ruleFlags
}

func newPolicyCheckCmd() *cobra.Command {
	opts := &policyCheckOptions{}
	cmd := &cobra.Command{
		Use:   "check [flags] -- ARGV...",
		Short: "Decide one command line against the policy",
		Long: `check decides ARGV against the effective policy (the policy file with the
rule flags applied, as "cordon run" would) and prints the decision and the
deciding rule:

  deny: git push origin main (rule: deny "git push")
    from cordon.yaml:4

It exits 0 for allow, 1 for deny and 2 for ask (125 if the policy does not
load).

check decides by name only, exactly like the policy file's examples: ARGV[0]
names the program as written (a path is matched by path rules, a bare name is
not looked up on PATH), nothing runs, there is no sandbox and no file
identity. So a renamed copy or a symlink of git is "git" to a real run but
not to check.

When ARGV is a shell given a script with -c (sh, bash, dash, zsh, ksh), check
also parses the script and prints the decision of each command in it whose
words are known before it runs; a command built from variables, command
substitutions or globs is listed as decided at exec time, and a shell builtin
as running without an exec. The exit code is then the strictest decision of
all. In a real run each of these commands is decided again, by itself, when
it is exec'd.`,
		Example: `  cordon policy check -- git -C . push origin main
  cordon policy check -- bash -c "make test && git push"
  cordon policy check --policy cordon.yaml -- npm publish
  cordon policy check --deny "rm -r" -- rm -rf build || echo "would be refused"`,
		Args:          cobra.MinimumNArgs(1),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd, args)
		},
	}
	cmd.Flags().SetInterspersed(false)
	addRuleFlags(cmd.Flags(), &opts.ruleFlags)
	return cmd
}

func (o *policyCheckOptions) run(cmd *cobra.Command, argv []string) error {
	eff, err := o.loadPolicy(cmd.Flags(), cmd.ErrOrStderr(), forShow)
	if err != nil {
		return err
	}
	res := eff.pol.Decide(nameOnlyExec(argv))
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s: %s (rule: %s)\n", res.Decision, supervisor.FormatArgv(argv), res.RuleText())
	if res.Rule != nil {
		fmt.Fprintf(out, "  from %s\n", res.Rule.Source)
	} else {
		fmt.Fprintf(out, "  from %s\n", eff.defaultFrom)
	}
	// A shell given -c: what it would run, as far as the script says
	// before it runs. The exit code is the strictest decision of all.
	switch inner := printInner(out, eff.pol, argv); {
	case inner > res.Decision:
		res.Decision = inner
	}
	switch res.Decision {
	case policy.Deny:
		return &exitError{code: exitCheckDeny}
	case policy.Ask:
		return &exitError{code: exitCheckAsk}
	}
	return nil
}

// nameOnlyExec is how check and the policy file's examples see a command
// line: argv[0] names the program, as written (policy.Compile checks
// examples the same way).
func nameOnlyExec(argv []string) *policy.Exec {
	return &policy.Exec{Argv: argv, Path: argv[0], Resolved: argv[0]}
}
