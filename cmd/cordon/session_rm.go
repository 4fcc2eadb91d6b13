//go:build cgo

package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newSessionRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID|NAME...",
		Aliases: []string{"remove"},
		Short:   "Close sessions: everything running in them is killed",
		Example: `  cordon session rm dev
  cordon session rm $(cordon session ls --json | jq -r '.[].id')`,
		Args:          cobra.MinimumNArgs(1),
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
			var firstErr error
			for _, id := range args {
				if err := c.CloseSession(ctx, id); err != nil {
					if firstErr == nil {
						firstErr = err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "cordon: %s: %v\n", id, err)
					continue
				}
				fmt.Fprintln(cmd.OutOrStdout(), id)
			}
			if firstErr != nil {
				return errReported
			}
			return nil
		},
	}
}
