//go:build cgo

package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/spf13/cobra"
)

type sessionCreateOptions struct {
	sandboxFlags
	name          string
	carry         bool
	idle          time.Duration
	askTimeout    time.Duration
	reportAllowed bool
	json          bool
}

func newSessionCreateCmd(opts *sessionCreateOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create [flags]",
		Short: "Create a session and print its id",
		Long: `Create a session in the daemon: a sandbox with the current directory writable,
your environment, and the policy "cordon run" would use here (--policy, the
discovered cordon.yaml, the rule flags). With --carry, cd and export in one
"cordon exec --session" script persist to the next.`,
		Example: `  cordon session create --name dev
  cordon session create --name ci --net none --deny "git push" --carry
  cordon session create --name agent --env-deny 'AWS_*' --env-pass GITHUB_TOKEN
  cordon session create --name scratch --carry --idle-timeout 30m
  cordon session create --name dev --ask-timeout 2m   # then: cordon session asks dev
  cordon session create --name web --allow-net registry.npmjs.org --allow-net '*.github.com'
  cordon session create --name agent --deny-read '**/.env*' --deny-write generated
  id=$(cordon session create)`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := opts.spec(cmd.Flags(), os.Stderr)
			if err != nil {
				return failed(err)
			}
			if opts.idle < 0 {
				return failed(errors.New("--idle-timeout must not be negative"))
			}
			spec.Name, spec.Carry, spec.ReportAllowed = opts.name, opts.carry, opts.reportAllowed
			spec.IdleTimeout = sandbox.Duration(opts.idle)
			if opts.askTimeout < 0 {
				return failed(errors.New("--ask-timeout must not be negative"))
			}
			spec.AskTimeout = sandbox.Duration(opts.askTimeout)
			ctx, cancel := commandContext()
			defer cancel()
			c, err := connectDaemon(ctx)
			if err != nil {
				return failed(err)
			}
			defer c.Close()
			info, err := c.CreateSession(ctx, spec)
			if err != nil {
				return interrupted(ctx, err)
			}
			if opts.json {
				return printJSON(cmd.OutOrStdout(), info)
			}
			fmt.Fprintln(cmd.OutOrStdout(), info.ID)
			return nil
		},
	}
	f := cmd.Flags()
	addSandboxFlags(f, &opts.sandboxFlags)
	f.StringVar(&opts.name, "name", "", "a name for the session (unique; usable wherever an id is)")
	f.BoolVar(&opts.carry, "carry", false, "keep the directory and exported variables a script leaves for the next exec")
	f.DurationVar(&opts.idle, "idle-timeout", 0, "close the session after this long without a command running in it (0: never)")
	f.DurationVar(&opts.askTimeout, "ask-timeout", 0, "hold execs and connections an ask rule covers this long for an answer (cordon session asks/answer); 0 denies them at once")
	f.BoolVar(&opts.reportAllowed, "report-allowed", false, "report allowed execs too (decisions, events)")
	f.BoolVar(&opts.json, "json", false, "print the session as JSON")
	return cmd
}
