//go:build cgo

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/spf13/cobra"
)

type daemonStopOptions struct{ timeout time.Duration }

func newDaemonStopCmd(opts *daemonStopOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the daemon: close its sessions, remove its files",
		Long: `Ask the daemon to shut down (POST /v1/shutdown; SIGTERM if it does not answer
but holds its lock) and wait until it has closed its sessions and released its
lock. Exit code 0 when it stopped or was not running.`,
		Example:       `  cordon daemon stop`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := commandContext()
			defer cancel()
			paths, err := daemon.Locate()
			if err != nil {
				return failed(err)
			}
			st, err := daemon.Stop(ctx, paths, opts.timeout)
			switch {
			case errors.Is(err, daemon.ErrNotRunning):
				fmt.Fprintln(cmd.OutOrStdout(), "cordon daemon not running")
				return nil
			case err != nil:
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cordon daemon stopped (pid %d)\n", st.Pid)
			return nil
		},
	}
	cmd.Flags().DurationVar(&opts.timeout, "timeout", 15*time.Second, "how long to wait for it to stop")
	return cmd
}
