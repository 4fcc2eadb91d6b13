//go:build cgo

package main

import "github.com/spf13/cobra"

func newSessionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Create, list and remove daemon sessions (sandboxes that live across commands)",
		Long: `A session is one sandbox under one policy that lives until it is removed;
"cordon exec --session S" and "cordon start --session S" run commands in it.
Sessions live in the daemon (started on first use).`,
		Example: `  cordon session create --name dev --carry --deny "git push"
  cordon exec --session dev -- make test
  cordon session ls
  cordon session rm dev`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newSessionCreateCmd(&sessionCreateOptions{}),
		newSessionLsCmd(&sessionLsOptions{}),
		newSessionRmCmd(),
		newSessionAsksCmd(),
		newSessionAnswerCmd(),
	)
	return cmd
}
