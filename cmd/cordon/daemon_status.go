//go:build cgo

package main

import (
	"fmt"

	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/spf13/cobra"
)

type daemonStatusOptions struct{ json bool }

// Exit codes of "cordon daemon status".
const (
	statusUnresponsive = 1
	statusStopped      = 3
)

func newDaemonStatusCmd(opts *daemonStatusOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether the daemon runs, where, and how that was decided",
		Long: `Probe the daemon: connect and call /v1/health; failing that, check its lock;
where the lock cannot be checked, its pid (EPERM counts as alive). Nothing is
started or removed.

Exit codes: 0 running, 1 alive but not answering, 3 not running.`,
		Example: `  cordon daemon status
  cordon daemon status --json`,
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
			st, err := daemon.Probe(ctx, paths)
			if err != nil {
				return failed(err)
			}
			out := cmd.OutOrStdout()
			if opts.json {
				if err := printJSON(out, st); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "state:    %s\ndir:      %s\n", st.State, st.Dir)
				if st.Pid > 0 {
					fmt.Fprintf(out, "pid:      %d\n", st.Pid)
				}
				if st.Health != nil {
					fmt.Fprintf(out, "endpoint: %s\ninstance: %s\nversion:  %s\nsessions: %d\n",
						st.Endpoint, st.Health.InstanceID, st.Health.Version, st.Health.Sessions)
				}
				fmt.Fprintf(out, "reason:   %s\n", st.Reason)
			}
			switch st.State {
			case daemon.Running:
				return nil
			case daemon.Unresponsive:
				return &exitError{code: statusUnresponsive}
			}
			return &exitError{code: statusStopped}
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the status as JSON")
	return cmd
}
