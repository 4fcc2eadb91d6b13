//go:build cgo

package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

type psOptions struct {
	session string
	json    bool
}

func newPsCmd(opts *psOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the daemon's started processes",
		Long: `List the processes started in the daemon's sessions ("cordon start"), running
or exited and still on record (exit records are kept for 10 minutes). Note:
"cordon -- ps" runs ps in a sandbox.`,
		Example: `  cordon ps
  cordon ps --session dev --json`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := commandContext()
			defer cancel()
			c, err := connectDaemon(ctx)
			if err != nil {
				return failed(err)
			}
			defer c.Close()
			list, err := c.ListProcesses(ctx, opts.session)
			if err != nil {
				return interrupted(ctx, err)
			}
			if opts.json {
				return printJSON(cmd.OutOrStdout(), list)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tEXIT\tAGE\tCOMMAND")
			for _, p := range list {
				exit := ""
				if p.Exit != nil {
					exit = describeExit(*p.Exit)
				}
				command := p.Script
				if command == "" {
					command = strings.Join(p.Argv, " ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, p.State, exit, time.Since(p.StartedAt).Round(time.Second), command)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&opts.session, "session", "", "only this session's processes (id or name)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the processes as JSON")
	return cmd
}
