//go:build cgo

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/agent"
	"github.com/cordon-sandbox/cordon/internal/shellcmd"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/cordon-sandbox/cordon/supervisor"
	"github.com/spf13/cobra"
)

// hookOptions holds the flags of "cordon hook".
type hookOptions struct {
	sandboxFlags
	idle       time.Duration
	askTimeout time.Duration
}

func newHookCmd(opts *hookOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook claude|codex|gemini|cursor",
		Short: "Answer an agent's pre-tool-use hook: decide its shell command and run it in a cordon session",
		Long: `hook is what an agent runs before each shell command (cordon init writes it
into the agent's settings). It reads the agent's hook payload (JSON) on stdin
and writes the answer on stdout in that agent's format:

  Claude Code  PreToolUse on Bash: hookSpecificOutput.permissionDecision
  Codex        PreToolUse on Bash (hooks.json): the same shape
  Gemini CLI   BeforeTool on run_shell_command: decision, reason, tool_input
  Cursor       preToolUse on Shell: permission, updated_input

The command is parsed as bash (a real shell parser) and every simple command
whose words are written out is decided against the policy "cordon run" would
use in the payload's cwd (a discovered cordon.yaml must be trusted). A denied
one is answered deny, with the rule and its message as the reason the agent
reads; an ask rule becomes the agent's own ask (Gemini has none: deny).

Otherwise the command is rewritten to run in a cordon session named after the
agent's session id, in carry mode (cd and export persist from one call to the
next), through the daemon (started when needed):

  /path/to/cordon exec --session agent-ID --shell bash -c 'ORIGINAL'

What a static reading cannot see (variables, $(...), eval, scripts) is still
decided, exec by exec, by the session's supervisor when it runs.

Anything the hook cannot read or do (malformed JSON, a missing field, a
command over 256 KiB, an untrusted policy, the daemon failing) is answered
deny, also as exit code 2 with the reason on stderr. A tool known to run no
shell command gets no opinion; an unknown tool name is denied, since the hook
cannot tell whether it runs commands (match only the shell tool).

Sessions made by the hook end after --idle without a command, or with
"cordon session rm agent-ID".`,
		Example: `  echo '{"session_id":"s1","cwd":"'$PWD'","tool_name":"Bash","tool_input":{"command":"git push"}}' | cordon hook claude
  cordon init claude            # writes "cordon hook claude" into .claude/settings.json
  cordon hook gemini --idle 2h  # sessions end after two idle hours`,
		Args:          cobra.ExactArgs(1),
		SilenceErrors: true,
		SilenceUsage:  true,
		ValidArgs:     []string{"claude", "codex", "gemini", "cursor"},
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := agent.ParseKind(args[0])
			if err != nil {
				return failed(err)
			}
			call, err := agent.Parse(k, cmd.InOrStdin())
			var ans agent.Answer
			if err != nil {
				ans = agent.Answer{Verdict: agent.Deny, Failed: true, Reason: err.Error()}
			} else {
				ans = opts.answer(cmd, call)
			}
			e := ans.Encode(k, call)
			_, _ = cmd.OutOrStdout().Write(e.Stdout)
			_, _ = io.WriteString(cmd.ErrOrStderr(), e.Stderr)
			if e.Code != 0 {
				return &exitError{code: e.Code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	addSandboxFlags(f, &opts.sandboxFlags)
	f.DurationVar(&opts.idle, "idle", time.Hour, "end a session the hook made after this long without a command (0: never)")
	f.DurationVar(&opts.askTimeout, "ask-timeout", 0, "in a session the hook made, hold an exec an ask rule covers this long for an answer from cordon session asks (0: deny at once)")
	return cmd
}

// answer decides call: the static check, then the session and the
// rewrite. It never returns an allow it could not back with a session.
func (o *hookOptions) answer(cmd *cobra.Command, call agent.Call) agent.Answer {
	fail := func(err error) agent.Answer {
		return agent.Answer{Verdict: agent.Deny, Failed: true, Reason: err.Error()}
	}
	switch {
	case call.NoShell:
		return agent.Answer{Verdict: agent.Pass}
	case !call.Shell:
		return agent.Answer{Verdict: agent.Deny, Reason: fmt.Sprintf(
			"cordon hook %s does not know the tool %q and cannot tell whether it runs shell commands; hook only the agent's shell tool (cordon init writes the right matcher)", call.Agent, call.Tool)}
	}
	if !filepath.IsAbs(call.Cwd) {
		return fail(fmt.Errorf("cwd %q is not an absolute path", call.Cwd))
	}
	// Everything below (policy discovery, the session's directory) is
	// relative to the agent's directory, as for "cordon run" started there.
	if err := os.Chdir(call.Cwd); err != nil {
		return fail(fmt.Errorf("the agent's cwd: %w", err))
	}
	// Warnings (a discovered file's notes) go nowhere: stdout is the
	// answer, and the agent shows a hook's stderr only on a block.
	eff, err := o.loadPolicy(cmd.Flags(), io.Discard, forRun)
	if err != nil {
		return fail(err)
	}
	verdict, reason := staticCheck(eff.pol, call.Command)
	if verdict == policy.Deny {
		return agent.Answer{Verdict: agent.Deny, Reason: reason}
	}
	session, err := o.ensureSession(cmd, call, eff)
	if err != nil {
		return fail(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(fmt.Errorf("finding cordon's own binary: %w", err))
	}
	words := []string{exe, "exec", "--session", session, "--shell", "bash"}
	if call.Dir != "" {
		words = append(words, "--cwd", call.Dir)
	}
	words = append(words, "-c", call.Command)
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = agent.Quote(w)
	}
	ans := agent.Answer{Verdict: agent.Allow, Command: strings.Join(quoted, " ")}
	ans.Reason = fmt.Sprintf("runs in cordon session %s under %s; every program it starts is decided by cordon when it runs", session, policyLabel(eff.loaded))
	if verdict == policy.Ask {
		ans.Verdict = agent.Ask
		ans.Reason = reason + "; if you approve, it runs in cordon session " + session +
			", where each exec an ask rule covers is asked again: answer with cordon session asks " + session +
			" (sessions made with cordon hook --ask-timeout; otherwise it is refused)"
	} else if reason != "" {
		ans.Reason += "; " + reason
	}
	return ans
}

// staticCheck decides every simple command of script whose words are
// written out (shellcmd: the reading "cordon policy check" uses) and
// returns the strictest decision with the reason the agent reads: the
// first denied (else asked) command and its rule, or a note on what is
// left to exec time.
func staticCheck(pol *policy.Policy, script string) (policy.Decision, string) {
	worst := policy.Allow
	var why string
	var dynamic []string
	for _, c := range shellcmd.Nested([]string{"bash", "-c", script}) {
		switch {
		case c.Err != nil:
			dynamic = append(dynamic, c.Err.Error())
		case c.Dynamic != "":
			dynamic = append(dynamic, supervisor.FormatArgv([]string{c.Dynamic}))
		case c.Builtin:
			switch c.Argv[0] {
			case "eval", "source", ".":
				// What they run is text the static reading never sees.
				dynamic = append(dynamic, supervisor.FormatArgv(c.Argv))
			}
		default:
			res := pol.Decide(nameOnlyExec(c.Argv))
			if res.Decision > worst {
				worst = res.Decision
				why = fmt.Sprintf("cordon policy: %s %s (rule: %s)", res.Decision, supervisor.FormatArgv(c.Argv), res.RuleText())
			}
		}
	}
	if worst != policy.Allow {
		return worst, why
	}
	if len(dynamic) > 0 {
		if len(dynamic) > 3 {
			dynamic = append(dynamic[:3], "...")
		}
		return policy.Allow, "commands whose words are known only when they run are decided then: " + strings.Join(dynamic, ", ")
	}
	return policy.Allow, ""
}

// hookBudget bounds the daemon's part of a hook (start, lookup, session
// creation). The agents give a hook 60 s by default and treat a hook that
// overruns as a non-blocking error, running the command as it was: the
// hook must answer, with a deny if need be, well before that.
const hookBudget = 20 * time.Second

// sessionIDPattern is what an agent's session id must look like to name
// a cordon session as it is; anything else is hashed.
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// hookSessionName is the cordon session an agent's session runs in.
func hookSessionName(id string) string {
	if sessionIDPattern.MatchString(id) {
		return "agent-" + id
	}
	sum := sha256.Sum256([]byte(id))
	return "agent-" + hex.EncodeToString(sum[:16])
}

// ensureSession returns the name of the agent session's cordon session,
// creating it (carry mode, the policy loaded here, the agent's directory
// writable) when it does not exist.
func (o *hookOptions) ensureSession(cmd *cobra.Command, call agent.Call, eff *effectivePolicy) (string, error) {
	name := hookSessionName(call.Session)
	ctx, cancel := context.WithTimeout(context.Background(), hookBudget)
	defer cancel()
	c, err := connectDaemon(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.GetSession(ctx, name); err == nil {
		return name, nil
	} else if !errors.Is(err, sandbox.ErrNotFound) {
		return "", fmt.Errorf("looking up session %s: %w", name, err)
	}
	spec, err := o.specWith(cmd.Flags(), eff)
	if err != nil {
		return "", err
	}
	spec.Name, spec.Carry = name, true
	spec.IdleTimeout = sandbox.Duration(o.idle)
	spec.AskTimeout = sandbox.Duration(o.askTimeout)
	if _, err := c.CreateSession(ctx, spec); err != nil && !errors.Is(err, sandbox.ErrExists) {
		return "", fmt.Errorf("creating session %s: %w", name, err)
	}
	return name, nil
}
