//go:build cgo

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/cordon-sandbox/cordon/config"
	"github.com/cordon-sandbox/cordon/internal/exitcode"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// exitSetup is the exit code of cordon's own failures; the command's own
// code passes through.
const exitSetup = 125

// exitError carries the command's exit code out of RunE without a message.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// commandError is a command that failed for a reason other than how it was
// called (the daemon's client commands): exitCode prints it without the
// usage hint.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// failed marks err as a failure of the command, not of how it was called.
func failed(err error) error { return &commandError{err: err} }

// errReported is a failure the command has already described on stderr
// (cordon session rm, one line per session it could not close).
var errReported = errors.New("failure already reported")

// errInterrupted is a client command the user interrupted (SIGINT, SIGTERM)
// while its request was in flight.
var errInterrupted = errors.New("interrupted")

// run executes the CLI and maps the outcome to an exit code. It is the one
// place that turns errors into exit codes.
func run(args []string) int {
	root := newRootCmd(!rootRuns(args))
	root.SetArgs(args)
	err := root.Execute()
	return exitCode(err)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ce *commandError
	switch {
	case errors.Is(err, errReported):
		return exitSetup
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(os.Stderr, "cordon: interrupted")
		return exitcode.Signal(syscall.SIGINT)
	case errors.As(err, &ce):
		fmt.Fprintf(os.Stderr, "cordon: %v\n", ce.err)
		return exitSetup
	}
	var xe *runner.ExecError
	if errors.As(err, &xe) {
		if !xe.Denied {
			fmt.Fprintf(os.Stderr, "cordon: %v\n", xe)
		}
		return xe.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
	// A setup failure says what to do itself (cordon doctor only when the
	// host is at fault); an untrusted or broken policy file names the file
	// and line. Anything else is how cordon was called.
	var ue *config.UntrustedError
	var pe *policyError
	if !errors.Is(err, runner.ErrSetup) && !errors.As(err, &ue) && !errors.As(err, &pe) {
		fmt.Fprintln(os.Stderr, "Run 'cordon --help' for usage.")
	}
	return exitSetup
}

// rootRuns reports whether args run the root command itself, the form
// "cordon [flags] -- CMD [ARG...]": its own flags, then "--" and a
// command. Only then is the tree built without its subcommands, which no
// such command line can name and whose twenty flag sets and templates took
// 0.4 ms of a 16 ms start (BENCHMARKS). Anything else (a subcommand, help,
// --version, a flag that does not parse, no command) gets the whole tree,
// and with it cobra's own messages.
func rootRuns(args []string) bool {
	fs := pflag.NewFlagSet("cordon", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	addRunFlags(fs, &runOptions{})
	if fs.Parse(args) != nil {
		return false
	}
	return fs.ArgsLenAtDash() == 0 && fs.NArg() > 0
}

// newRootCmd builds the command line: the root command (the run
// shorthand) and, with subcommands, every other command.
func newRootCmd(subcommands bool) *cobra.Command {
	opts := &runOptions{}
	root := &cobra.Command{
		Use:   "cordon [flags] -- CMD [ARG...]",
		Short: "Run a command in a sandbox that checks every exec against a policy",
		Long: `cordon runs a command inside a bubblewrap sandbox and decides every program
started inside it, at any depth, against an argv policy. The decision is made
on the host by a supervisor that receives seccomp user notifications. A denied
exec fails with "Operation not permitted" and cordon prints one line:

  cordon: denied: git push origin main (rule: deny "git push")

"cordon -- CMD" is shorthand for "cordon run -- CMD".

Exit codes: the command's own; 128+N if it was killed by signal N; 126 if the
command was denied or is not executable; 127 if it was not found; 124 on
--timeout; 125 if cordon itself failed.`,
		Example: `  # An agent shell where pushing is not allowed
  cordon --deny "git push" -- bash

  # Allowlist mode: only these programs may run
  cordon --default deny --allow bash --allow ls --allow cat -- bash -c 'ls | cat'

  # Check what this host supports
  cordon doctor`,
		Args:          cobra.ArbitraryArgs,
		Version:       buildVersion(),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return opts.run(cmd, args)
		},
	}
	root.Flags().SetInterspersed(false)
	root.SetVersionTemplate(versionLine())
	addRunFlags(root.Flags(), opts)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	if !subcommands {
		return root
	}
	root.AddCommand(newRunCmd(), newPolicyCmd(), newDoctorCmd(), newVersionCmd())
	root.AddCommand(newServeCmd(&serveOptions{}), newDaemonCmd(), newSessionCmd(), newExecCmd(&execOptions{}), newHookCmd(&hookOptions{}), newInitCmd(&initOptions{}),
		newStartCmd(&startOptions{}), newPsCmd(&psOptions{}), newLogsCmd(&logsOptions{}), newWaitCmd(&waitOptions{}), newKillCmd(&killOptions{}))
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = `  # Load completions in the current bash session
  source <(cordon completion bash)

  # Install them for every zsh session
  cordon completion zsh > "${fpath[1]}/_cordon"`
		}
	}
	return root
}
