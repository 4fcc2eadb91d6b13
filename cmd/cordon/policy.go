//go:build cgo

package main

import "github.com/spf13/cobra"

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check, test and show the exec policy",
		Long: `policy works with the exec policy without running anything in a sandbox.

The policy is found as "cordon run" finds it: --policy FILE; else cordon.yaml
or .cordon.yaml in the current directory or a parent up to the repository
root; else $XDG_CONFIG_HOME/cordon/policy.yaml; else the built-in default.
A discovered file decides a run only while its content is trusted ("cordon
policy trust"); check, test and show load it anyway and say so.

  check   decide one command line and print the deciding rule
  test    run the policy file's examples and print PASS or FAIL for each
  show    print the effective policy: every rule with where it came from
  trust   trust policy files as they are now (after reviewing them)`,
		Example: `  # Would this be allowed here?
  cordon policy check -- git push origin main

  # Run the examples of the policy file that applies here
  cordon policy test

  # Everything that applies, with --deny rules added
  cordon policy show --deny "npm publish"

  # Trust the file that applies here, once reviewed
  cordon policy trust`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newPolicyCheckCmd(), newPolicyTestCmd(), newPolicyShowCmd(), newPolicyTrustCmd())
	return cmd
}
