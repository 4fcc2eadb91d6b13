//go:build cgo

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/spf13/cobra"
)

type startOptions struct {
	session   string
	cwd       string
	env       []string
	pipe      bool
	timeout   time.Duration
	killGrace time.Duration
	json      bool
	script    string
}

func newStartCmd(opts *startOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "start --session S [flags] -- CMD [ARG...] | start --session S -c SCRIPT",
		Short: "Start a process in a session and print its id",
		Long: `Start CMD in a session of the daemon and print the process's id; it runs on
after this command returns. Follow it with "cordon logs -f ID", wait for it
with "cordon wait ID", end it with "cordon kill ID".`,
		Example: `  cordon session create --name dev
  id=$(cordon start --session dev -- npm run dev)
  cordon logs -f "$id"
  cordon kill "$id"`,
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.session == "" {
				return failed(errors.New("--session is required: processes live in sessions (cordon session create)"))
			}
			if (len(args) == 0) == (opts.script == "") {
				return failed(errors.New("give a command (-- CMD [ARG...]) or a script (-c SCRIPT), not both"))
			}
			req := sandbox.StartRequest{
				Session: opts.session, Argv: args, Script: opts.script, Dir: opts.cwd, Env: opts.env,
				Timeout: sandbox.Duration(opts.timeout), KillGrace: sandbox.Duration(opts.killGrace),
			}
			if opts.pipe {
				req.Stdin = sandbox.StdinPipe
			}
			ctx, cancel := commandContext()
			defer cancel()
			c, err := connectDaemon(ctx)
			if err != nil {
				return failed(err)
			}
			defer c.Close()
			p, err := c.Start(ctx, req)
			if err != nil {
				return interrupted(ctx, err)
			}
			if opts.json {
				return printJSON(cmd.OutOrStdout(), p)
			}
			fmt.Fprintln(cmd.OutOrStdout(), p.ID)
			return nil
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.StringVar(&opts.session, "session", "", "the session (id or name)")
	f.StringVarP(&opts.script, "script", "c", "", "run this script with sh -c instead of CMD")
	f.StringVar(&opts.cwd, "cwd", "", "working directory (default: the session's)")
	f.StringArrayVar(&opts.env, "env", nil, "set KEY=VALUE for the process (repeatable)")
	f.BoolVar(&opts.pipe, "stdin-pipe", false, "give the process a stdin pipe (written with POST /v1/processes/{id}/stdin)")
	f.DurationVar(&opts.timeout, "timeout", 0, "end the process's tree after this long")
	f.DurationVar(&opts.killGrace, "kill-grace", 0, "time between SIGTERM and SIGKILL (default: the daemon's, 5s)")
	f.BoolVar(&opts.json, "json", false, "print the process as JSON")
	return cmd
}
