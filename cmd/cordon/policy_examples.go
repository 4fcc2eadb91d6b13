//go:build cgo

package main

// This file holds "cordon policy test" (a file named policy_test.go would be
// a Go test file).

import (
	"fmt"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"github.com/spf13/cobra"
)

// exitExamplesFailed is "cordon policy test"'s exit code when an example
// does not hold.
const exitExamplesFailed = 1

// policyTestOptions holds the flags of "cordon policy test".
type policyTestOptions struct {
	file string
}

func newPolicyTestCmd() *cobra.Command {
	opts := &policyTestOptions{}
	cmd := &cobra.Command{
		Use:   "test [--policy FILE]",
		Short: "Run the policy file's examples",
		Long: `test decides every example of the policy file and prints PASS or FAIL for
each, with what the policy decided instead and why. Unlike loading the policy
for a run, which stops at the first failing example with an error, test
reports them all. It exits 0 when every example holds, 1 when one does not,
and 125 when the file does not load.

Examples are decided against the file alone (no --deny/--allow flags) and by
name only, as "cordon policy check" decides: argv[0] names the program as
written. The files section's examples (deny_read, read, deny_write, write)
are decided against its rules and the built-in ones, by path only: nothing
is read.

Allow rules match strictly since the policy's second edition (the first
edition's were prefixes). When an example fails only because of that, test
says so, names the allow rule that used to decide it, and shows the "..."
that widens the rule again.`,
		Example: `  # The examples of the policy that applies in this directory
  cordon policy test

  # A given file, e.g. before committing it
  cordon policy test --policy cordon.yaml`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return opts.run(cmd)
		},
	}
	cmd.Flags().StringVar(&opts.file, "policy", "", "policy file (default: the one \"cordon run\" would use here)")
	return cmd
}

func (o *policyTestOptions) run(cmd *cobra.Command) error {
	l, err := loadPolicyFile(o.file, cmd.ErrOrStderr(), forShow)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	cfg := l.Config()
	examples, fileExamples := cfg.Examples, cfg.Files.Examples
	if len(examples)+len(fileExamples) == 0 {
		fmt.Fprintf(out, "no examples in %s\n", policyLabel(l))
		return nil
	}
	cfg.Examples, cfg.Files.Examples = nil, nil
	pol, err := policy.Compile(cfg)
	if err != nil {
		return err
	}
	failed := 0
	for _, ex := range fileExamples {
		want := policy.FileExampleResult(policy.FileRule{}, ex.Denied)
		r, denied := pol.DecideFileExample(ex)
		if denied == ex.Denied {
			fmt.Fprintf(out, "PASS  %s %s: %s  (%s)\n", ex.Access, ex.Path, policy.FileExampleResult(r, denied), ex.Source)
			continue
		}
		failed++
		fmt.Fprintf(out, "FAIL  %s %s: want %s  (%s)\n      got %s\n", ex.Access, ex.Path, want, ex.Source, policy.FileExampleResult(r, denied))
	}
	var first *policy.Policy // compiled on the first failure
	for _, ex := range examples {
		argv := supervisor.FormatArgv(ex.Argv)
		got := pol.Decide(nameOnlyExec(ex.Argv))
		if got.Decision == ex.Decision {
			fmt.Fprintf(out, "PASS  %s: %s  (%s)\n", ex.Decision, argv, ex.Source)
			continue
		}
		failed++
		fmt.Fprintf(out, "FAIL  %s: %s  (%s)\n      got %s (rule: %s)\n", ex.Decision, argv, ex.Source, got.Decision, got.RuleText())
		// Say so when the example held under the first edition's
		// meaning of allow rules (prefixes): its meaning changed, the
		// policy did not.
		if first == nil {
			first = pol.FirstEdition()
		}
		if h := (&policy.ExampleError{Example: ex, Got: got, FirstEdition: first.Explain(ex)}).Hint(); h != "" {
			fmt.Fprintf(out, "      %s\n", h)
		}
	}
	if failed > 0 {
		fmt.Fprintf(out, "%d of %d examples failed in %s\n", failed, len(examples)+len(fileExamples), policyLabel(l))
		return &exitError{code: exitExamplesFailed}
	}
	fmt.Fprintf(out, "all %d examples hold in %s\n", len(examples)+len(fileExamples), policyLabel(l))
	return nil
}
