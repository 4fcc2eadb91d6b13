package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runOptions holds the flags of "cordon run" (and of the root shorthand).
type runOptions struct {
	deny, allow []string
	def         string
	policyFile  string
	noDefaults  bool
	rw, ro      []string
	net         string
	isolation   string
	audit       string
	debug       bool
	timeout     time.Duration
	killGrace   time.Duration
	wedgeAfter  int
	dropAfter   int
}

func addRunFlags(fs *pflag.FlagSet, o *runOptions) {
	fs.StringArrayVar(&o.deny, "deny", nil, "deny execs matching RULE (repeatable), e.g. --deny \"git push\"")
	fs.StringArrayVar(&o.allow, "allow", nil, "allow execs matching RULE (repeatable)")
	fs.StringVar(&o.def, "default", "allow", "decision when no rule matches: allow or deny (allowlist mode)")
	fs.StringVar(&o.policyFile, "policy", "", "policy file (YAML or JSON)")
	fs.BoolVar(&o.noDefaults, "no-defaults", false, "do not apply the built-in deny list of destructive system commands")
	fs.StringArrayVar(&o.rw, "rw", nil, "bind PATH read-write into the sandbox (repeatable)")
	fs.StringArrayVar(&o.ro, "ro", nil, "bind PATH read-only into the sandbox (repeatable)")
	fs.StringVar(&o.net, "net", "host", "network: host or none")
	fs.StringVar(&o.isolation, "isolation", "bwrap", "bwrap, or none: enforce the exec policy without a sandbox (prints a warning)")
	fs.StringVar(&o.audit, "audit", "", "append one JSON line per exec decision to FILE (- for stderr)")
	fs.BoolVar(&o.debug, "debug", false, "log what cordon does to stderr")
	fs.DurationVar(&o.timeout, "timeout", 0, "stop the command after this long (SIGTERM, then SIGKILL after --kill-grace); exit code 124")
	fs.DurationVar(&o.killGrace, "kill-grace", 5*time.Second, "time between SIGTERM and SIGKILL on --timeout")
	fs.IntVar(&o.wedgeAfter, "debug-wedge-supervisor", 0, "testing: wedge the supervisor's receive after N notifications")
	_ = fs.MarkHidden("debug-wedge-supervisor")
	fs.IntVar(&o.dropAfter, "debug-drop-supervisor", 0, "testing: close the supervisor's listener after N notifications")
	_ = fs.MarkHidden("debug-drop-supervisor")
}

func newRunCmd() *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...]",
		Short: "Run a command in the sandbox (same as cordon -- CMD)",
		Long: `Run CMD inside a bubblewrap sandbox: read-only root, the current directory
writable, private /tmp, minimal /dev, fresh /proc, its own pid namespace.
Every exec inside it is decided against the policy before it runs.

A RULE is space-separated words: the first is matched against the base name
of the program being run, the rest as a prefix of its arguments. The strictest
matching rule wins (deny over allow); --default applies when none matches.`,
		Example: `  cordon run --deny "git push" -- bash
  cordon run --net none --rw ~/.cache -- make test
  cordon run --audit audit.jsonl -- ./agent.sh
  cordon run --timeout 10m -- npm test`,
		Args:          cobra.MinimumNArgs(1),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd, args)
		},
	}
	cmd.Flags().SetInterspersed(false)
	addRunFlags(cmd.Flags(), opts)
	return cmd
}

func (o *runOptions) policy() (*policy.Policy, error) {
	def, err := policy.ParseDecision(o.def)
	if err != nil {
		return nil, fmt.Errorf("--default: %w", err)
	}
	if def == policy.Ask {
		return nil, errors.New("--default: want allow or deny")
	}
	if o.policyFile != "" {
		return nil, fmt.Errorf("--policy %s: policy files are not supported yet", o.policyFile)
	}
	cfg := policy.Config{Default: def, Builtins: !o.noDefaults}
	for _, r := range o.deny {
		cfg.Rules = append(cfg.Rules, policy.Rule{Decision: policy.Deny, Pattern: r, Source: "--deny"})
	}
	for _, r := range o.allow {
		cfg.Rules = append(cfg.Rules, policy.Rule{Decision: policy.Allow, Pattern: r, Source: "--allow"})
	}
	return policy.Compile(cfg)
}

func (o *runOptions) run(cmd *cobra.Command, args []string) error {
	pol, err := o.policy()
	if err != nil {
		return err
	}
	iso, err := runner.ParseIsolation(o.isolation)
	if err != nil {
		return fmt.Errorf("--isolation: %w", err)
	}
	netMode, err := bwrap.ParseNet(o.net)
	if err != nil {
		return fmt.Errorf("--net: %w", err)
	}
	if o.timeout < 0 || o.killGrace < 0 {
		return errors.New("--timeout and --kill-grace must not be negative")
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("finding the current directory: %w", err)
	}
	logger := slog.New(slog.DiscardHandler)
	if o.debug {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if iso == runner.IsolationNone {
		fmt.Fprintln(os.Stderr, "cordon: warning: --isolation none: execs are checked against the policy, but the command is NOT sandboxed: it sees and can change everything you can")
		if netMode != bwrap.NetHost || len(o.rw) > 0 || len(o.ro) > 0 {
			return errors.New("--net, --rw and --ro need --isolation bwrap")
		}
	}
	var audit io.Writer
	switch o.audit {
	case "":
	case "-":
		audit = os.Stderr
	default:
		f, err := os.OpenFile(o.audit, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("--audit: %w", err)
		}
		defer f.Close()
		audit = f
	}
	res, err := runner.Run(context.Background(), runner.Options{
		Argv:                 args,
		Env:                  os.Environ(),
		Dir:                  dir,
		Policy:               pol,
		Isolation:            iso,
		RW:                   absAll(o.rw),
		RO:                   absAll(o.ro),
		Net:                  netMode,
		Stdin:                os.Stdin,
		Stdout:               os.Stdout,
		Stderr:               os.Stderr,
		Audit:                audit,
		Timeout:              o.timeout,
		KillGrace:            o.killGrace,
		Logger:               logger,
		WedgeSupervisorAfter: o.wedgeAfter,
		DropSupervisorAfter:  o.dropAfter,
	})
	if err != nil {
		return err
	}
	if res.TimedOut {
		fmt.Fprintf(os.Stderr, "cordon: timed out after %v\n", o.timeout)
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode}
	}
	return nil
}
