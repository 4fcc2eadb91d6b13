//go:build cgo

package main

import (
	"fmt"
	"iter"

	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/spf13/cobra"
)

type logsOptions struct {
	follow bool
	after  uint64
}

func newLogsCmd(opts *logsOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs [-f] ID",
		Short: "Print a started process's output (and denied execs)",
		Long: `Print what a started process wrote so far, stdout to stdout and stderr to
stderr, and a line on stderr for each exec the policy denied. With -f, follow
it until it exits. --after resumes from an event cursor.`,
		Example: `  cordon logs "$id"
  cordon logs -f "$id"`,
		Args:          cobra.ExactArgs(1),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext()
			defer cancel()
			c, err := connectDaemon(ctx)
			if err != nil {
				return failed(err)
			}
			defer c.Close()
			var events iter.Seq2[sandbox.Event, error]
			if opts.follow {
				events = c.Events(ctx, "", args[0], opts.after)
			} else {
				events = c.History(ctx, args[0], opts.after)
			}
			for ev, err := range events {
				if err != nil {
					return interrupted(ctx, err)
				}
				switch ev.Kind {
				case sandbox.EventStdout:
					_, _ = cmd.OutOrStdout().Write(ev.Data)
				case sandbox.EventStderr:
					_, _ = cmd.ErrOrStderr().Write(ev.Data)
				case sandbox.EventDecision:
					printDecisions(cmd.ErrOrStderr(), []sandbox.ExecDecision{*ev.Decision})
				case sandbox.EventTruncated:
					fmt.Fprintf(cmd.ErrOrStderr(), "cordon: %d events dropped from the retention buffer\n", ev.Dropped)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "follow the output until the process exits")
	cmd.Flags().Uint64Var(&opts.after, "after", 0, "start after this event cursor")
	return cmd
}
