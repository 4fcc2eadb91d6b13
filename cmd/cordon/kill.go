//go:build cgo

package main

import (
	"fmt"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/spf13/cobra"
)

type killOptions struct {
	grace  time.Duration
	signal string
	scope  string
	json   bool
}

func newKillCmd(opts *killOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kill [flags] ID",
		Short: "End a started process's whole tree, or send it a signal",
		Long: `Without --signal: SIGTERM and SIGCONT to every process of the tree (however it
detached), --grace, then SIGKILL; print the final status. With --signal: send
that signal to the tree (or, with --scope process, to the leader only).`,
		Example: `  cordon kill "$id"
  cordon kill --grace 0 "$id"          # SIGKILL at once
  cordon kill --signal HUP "$id"`,
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
			if opts.signal != "" {
				sig, err := sandbox.ParseSignal(opts.signal)
				if err != nil {
					return failed(err)
				}
				if err := c.Signal(ctx, "", args[0], sig, sandbox.Scope(opts.scope)); err != nil {
					return interrupted(ctx, err)
				}
				return nil
			}
			exit, err := c.Kill(ctx, "", args[0], opts.grace)
			if err != nil {
				return interrupted(ctx, err)
			}
			if opts.json {
				return printJSON(cmd.OutOrStdout(), exit)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", args[0], describeExit(exit))
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opts.grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL")
	f.StringVar(&opts.signal, "signal", "", "send this signal (name or number) instead of ending the tree")
	f.StringVar(&opts.scope, "scope", "tree", "with --signal: tree or process (the leader only)")
	f.BoolVar(&opts.json, "json", false, "print the final status as JSON")
	return cmd
}
