//go:build cgo

package main

import "github.com/spf13/cobra"

func newDaemonCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Start, stop or inspect the cordon daemon",
		Long: `Manage the per-user cordon daemon (see "cordon serve"). The client commands
start it on first use; these commands do it explicitly.`,
		Example: `  cordon daemon start
  cordon daemon status --json
  cordon daemon stop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newDaemonStartCmd(&daemonStartOptions{}),
		newDaemonStopCmd(&daemonStopOptions{}),
		newDaemonStatusCmd(&daemonStatusOptions{}),
	)
	return cmd
}
