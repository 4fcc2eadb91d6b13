//go:build cgo

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/spf13/cobra"
)

type daemonStartOptions struct {
	socket, listen string
	timeout        time.Duration
}

func newDaemonStartCmd(opts *daemonStartOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start the daemon in the background unless it runs",
		Long: `Start "cordon serve" in the background (its own session, output to
daemon.log) and wait for it to say it is ready, or to report why it could not
start: that error is printed here and the exit code is 125. When a daemon
already runs, say so and exit 0. Concurrent starts start one daemon.`,
		Example: `  cordon daemon start
  cordon daemon start --listen 127.0.0.1:0   # TCP with a token`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := commandContext()
			defer cancel()
			var args []string
			if opts.socket != "" {
				args = append(args, "--socket", opts.socket)
			}
			if opts.listen != "" {
				args = append(args, "--listen", opts.listen)
			}
			paths, err := daemon.Locate()
			if err != nil {
				return failed(err)
			}
			exe, err := os.Executable()
			if err != nil {
				return failed(fmt.Errorf("finding cordon's own binary: %w", err))
			}
			st, err := daemon.Start(ctx, paths, daemon.StartOptions{Exe: exe, Args: args, Timeout: opts.timeout})
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cordon daemon running: pid %d, %s\n", st.Pid, st.Endpoint)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.socket, "socket", "", "listen on this Unix socket")
	cmd.Flags().StringVar(&opts.listen, "listen", "", "listen on TCP at this loopback address with a token (127.0.0.1:0)")
	cmd.Flags().DurationVar(&opts.timeout, "timeout", 20*time.Second, "how long to wait for the daemon to be ready")
	return cmd
}
