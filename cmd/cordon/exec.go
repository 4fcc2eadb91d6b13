//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/cordon-sandbox/cordon/internal/apiconv"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/spf13/cobra"
)

type execOptions struct {
	sandboxFlags
	session   string
	cwd       string
	env       []string
	stdin     bool
	timeout   time.Duration
	killGrace time.Duration
	noDaemon  bool
	json      bool
	encoding  string
	script    string
	shell     string
}

func newExecCmd(opts *execOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec [flags] -- CMD [ARG...] | exec [flags] -c SCRIPT",
		Short: "Run a command to completion through the daemon (in a session, or a throwaway sandbox)",
		Long: `Run CMD to completion and pass its output and exit code through; the output
is passed on as the command writes it (through the daemon too: the API's
POST /v1/exec?stream=1). With --session
it runs in that session (its policy, its carried directory in carry mode);
without, in a throwaway sandbox made like "cordon run" makes one (current
directory writable, your environment, the policy found here and the rule
flags), which is gone when the command ends, with everything it started.

With -c SCRIPT the command is a script run by sh -c (bash -c with --shell
bash); in a carry-mode session the directory and exported variables it leaves
become the session's.

The daemon is started on first use; --no-daemon runs the same thing in this
process. The command's stdin is /dev/null unless --stdin passes cordon's stdin
(read to its end first). Ctrl-C cancels the request: the daemon kills the
command's tree.

With --json the result is printed as the API's POST /v1/exec answers it
(exit_code, signal, duration_ms, stdout and stderr as text with *_lossy flags,
decisions...; see server/openapi.yaml); --encoding base64 gives stdout_b64 and
stderr_b64 instead, byte for byte. The exit code is the command's either way.

Exit codes: the command's own; 128+N when signal N killed it; 124 on
--timeout; 126 denied by the policy or not executable; 127 not found; 125 when
cordon or the daemon failed.`,
		Example: `  cordon exec -- make test
  cordon exec --deny "git push" -- git push origin main   # exit 126
  cordon exec --env-pass NPM_TOKEN -- npm whoami
  cordon exec --deny-read '**/.env*' -- cat .env           # Permission denied
  cordon exec --session dev -- npm test
  cordon exec --allow-net pypi.org --allow-net files.pythonhosted.org -- pip download requests
  cordon exec --session dev -c 'cd src && export STAGE=build'
  cordon exec --session dev --shell bash -c '[[ -d src ]] && cd src'
  echo data | cordon exec --stdin -- wc -c
  cordon exec --no-daemon --timeout 10s -- ./slow.sh
  cordon exec --json -- git status | jq -r .stdout`,
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd, args)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	addSandboxFlags(f, &opts.sandboxFlags)
	f.StringVar(&opts.session, "session", "", "run in this session (id or name)")
	f.StringVarP(&opts.script, "script", "c", "", "run this script with sh -c (carried in a carry-mode session) instead of CMD")
	f.StringVar(&opts.shell, "shell", "sh", "with -c: the shell that runs the script, sh or bash")
	f.StringVar(&opts.cwd, "cwd", "", "working directory of the command (default: the session's, or the current one)")
	f.StringArrayVar(&opts.env, "env", nil, "set KEY=VALUE for the command (repeatable)")
	f.BoolVarP(&opts.stdin, "stdin", "i", false, "pass cordon's stdin to the command (read to its end first)")
	f.DurationVar(&opts.timeout, "timeout", 0, "end the command's tree after this long (SIGTERM, then SIGKILL after --kill-grace); exit code 124")
	f.DurationVar(&opts.killGrace, "kill-grace", 5*time.Second, "time between SIGTERM and SIGKILL on --timeout")
	f.BoolVar(&opts.noDaemon, "no-daemon", false, "run in this process instead of through the daemon")
	f.BoolVar(&opts.json, "json", false, "print the whole result as JSON (the API's exec result) instead of passing the output through")
	f.StringVar(&opts.encoding, "encoding", api.EncodingText, "with --json: stdout and stderr as text (UTF-8) or base64 (byte-exact)")
	return cmd
}

func (o *execOptions) run(cmd *cobra.Command, args []string) error {
	if (len(args) == 0) == (o.script == "") {
		return failed(errors.New("give a command (-- CMD [ARG...]) or a script (-c SCRIPT), not both"))
	}
	req := sandbox.ExecRequest{
		Argv: args, Script: o.script, Shell: o.shell, Dir: o.cwd, Env: o.env,
		Timeout: sandbox.Duration(o.timeout), KillGrace: sandbox.Duration(o.killGrace),
	}
	if o.shell != "sh" && o.shell != "bash" {
		return failed(fmt.Errorf("--shell %q: want sh or bash", o.shell))
	}
	if o.timeout < 0 || o.killGrace < 0 {
		return failed(errors.New("--timeout and --kill-grace must not be negative"))
	}
	if o.encoding != api.EncodingText && o.encoding != api.EncodingBase64 {
		return failed(fmt.Errorf("--encoding %q: want text or base64", o.encoding))
	}
	switch {
	case o.session != "" && sandboxChanged(cmd.Flags()):
		return failed(errors.New("--session: the session's sandbox and policy were set when it was created; the policy, --rw, --ro and --net flags are for a throwaway sandbox"))
	case o.session != "" && o.noDaemon:
		return failed(errors.New("--no-daemon runs a throwaway sandbox: sessions live in the daemon"))
	case o.session != "":
		req.Session = o.session
	default:
		spec, err := o.spec(cmd.Flags(), os.Stderr)
		if err != nil {
			return failed(err)
		}
		req.Sandbox = &spec
	}
	if o.stdin {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return failed(fmt.Errorf("reading stdin: %w", err))
		}
		req.Stdin = b
	}
	ctx, cancel := commandContext()
	defer cancel()
	var svc sandbox.Service
	if o.noDaemon {
		hide, hideFiles := daemon.HidePaths()
		m := sandbox.NewManager(sandbox.Options{Hide: hide, HideFiles: hideFiles})
		defer m.Close(context.Background())
		svc = m
	} else {
		c, err := connectDaemon(ctx)
		if err != nil {
			return failed(err)
		}
		defer c.Close()
		svc = c
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	streamed := false
	// Denial lines printed as the denials happened, so that the result's
	// list does not print them again.
	printed := map[string]int{}
	if !o.json {
		req.OnDecision = func(d sandbox.ExecDecision) {
			if line := denialLine(d); line != "" {
				fmt.Fprintln(stderr, line)
				printed[line]++
			}
		}
		// The output is passed through as the command writes it, not
		// when it ends.
		req.Output = func(kind sandbox.EventKind, data []byte) {
			streamed = true
			if kind == sandbox.EventStdout {
				_, _ = stdout.Write(data)
			} else {
				_, _ = stderr.Write(data)
			}
		}
	}
	res, err := svc.Exec(ctx, req)
	if err != nil && res.ExitedAt.IsZero() {
		return interrupted(ctx, err)
	}
	if o.json {
		if err := printJSON(cmd.OutOrStdout(), apiconv.APIExecResult(res, o.encoding)); err != nil {
			return err
		}
	} else {
		if !streamed {
			// Nothing came as a stream (a command that printed nothing,
			// or a daemon that answers in one piece): the result has it.
			_, _ = stdout.Write(res.Stdout)
			_, _ = stderr.Write(res.Stderr)
		}
		for _, d := range res.Decisions {
			line := denialLine(d)
			switch {
			case line == "":
			case printed[line] > 0:
				printed[line]--
			default:
				fmt.Fprintln(stderr, line)
			}
		}
		switch {
		case res.TimedOut:
			fmt.Fprintf(cmd.ErrOrStderr(), "cordon: timed out after %v\n", o.timeout)
		case res.Error != "" && !res.Denied:
			fmt.Fprintf(cmd.ErrOrStderr(), "cordon: %s\n", res.Error)
		}
		if !streamed && (res.StdoutTruncated || res.StderrTruncated) {
			fmt.Fprintln(cmd.ErrOrStderr(), "cordon: output truncated")
		}
	}
	if code := res.ShellCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}
