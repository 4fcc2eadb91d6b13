//go:build cgo

package main

import (
	"github.com/spf13/cobra"
)

type waitOptions struct{ json bool }

func newWaitCmd(opts *waitOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wait ID",
		Short: "Wait for a started process to exit, and exit with its code",
		Long: `Wait until the process's leader has exited and exit as "cordon exec" would:
its code, 128+N for signal N, 124 when its timeout fired.`,
		Example: `  cordon wait "$id"; echo $?
  cordon wait --json "$id"`,
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
			exit, err := c.Wait(ctx, "", args[0])
			if err != nil {
				return interrupted(ctx, err)
			}
			if opts.json {
				if err := printJSON(cmd.OutOrStdout(), exit); err != nil {
					return err
				}
			}
			if code := exit.ShellCode(); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the exit as JSON")
	return cmd
}
