//go:build cgo

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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
	timeout    time.Duration
}

func newHookCmd(opts *hookOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook claude|codex|gemini|cursor",
		Short: "Answer an agent's pre-tool-use hook: decide its shell command and run it in a cordon session",
		Long: `hook is what an agent runs before each shell command (cordon init writes it
into the agent's settings). It reads the agent's hook payload (JSON) on stdin
and writes the answer on stdout in that agent's format:

  Claude Code  PreToolUse on Bash: hookSpecificOutput.permissionDecision
  Codex        PreToolUse on Bash (hooks.json): the same shape, but no ask
  Gemini CLI   BeforeTool on run_shell_command: decision, reason, tool_input
  Cursor       preToolUse on Shell: permission, updated_input

The command is parsed as bash (a real shell parser) and every simple command
whose words are written out is decided against the policy "cordon run" would
use in the payload's cwd (a discovered cordon.yaml must be trusted). A denied
one is answered deny, with the rule and its message as the reason the agent
reads; an ask rule becomes the agent's own ask (Gemini and Codex have none:
deny, with a reason that says how to allow it).

Otherwise the command is rewritten to run in a cordon session named after the
agent's session id and a digest of the hook's settings (policy, flags), in
carry mode (cd and export persist from one call to the next), through the
daemon (started when needed):

  /path/to/cordon exec --session agent-ID-DIGEST --shell bash -c 'ORIGINAL'

What a static reading cannot see (variables, $(...), eval, scripts) is still
decided, exec by exec, by the session's supervisor when it runs.

The whole hook answers within --timeout (30s): the agents run the original
command when a hook times out, so cordon answers deny first. A command too
complex to check (brackets nested over 64 deep, over 200,000 syntax nodes)
is denied. Anything the hook cannot read or do (malformed JSON, a missing
field, a command over 256 KiB, an untrusted policy, the daemon failing, the
deadline) is answered deny, also as exit code 2 with the reason on stderr.
Cursor's beforeShellExecution event cannot rewrite a command: it is always
denied (hook preToolUse instead). A tool known to run no shell command gets
no opinion; an unknown tool name is denied, since the hook cannot tell
whether it runs commands (match only the shell tool).

Sessions made by the hook end after --idle without a command, or with
"cordon session rm agent-ID-DIGEST" (cordon session ls lists them).`,
		Example: `  echo '{"session_id":"s1","cwd":"'$PWD'","tool_name":"Bash","tool_input":{"command":"git push"}}' | cordon hook claude
  cordon init claude            # writes "cordon hook claude" into .claude/settings.json
  cordon hook gemini --idle 2h  # sessions end after two idle hours
  cordon hook claude --timeout 20s --deny 'npm publish'`,
		Args:          cobra.ExactArgs(1),
		SilenceErrors: true,
		SilenceUsage:  true,
		ValidArgs:     []string{"claude", "codex", "gemini", "cursor"},
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := agent.ParseKind(args[0])
			if err != nil {
				// Not an agent cordon knows, so no format to answer
				// in: exit 2 with the reason on stderr, which every
				// one of them reads as "blocked" (125 would be a
				// non-blocking error: the command would run).
				_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "cordon: denied: %v\n", err)
				return &exitError{code: 2}
			}
			if opts.timeout <= 0 {
				ans := agent.Answer{Verdict: agent.Deny, Failed: true, Reason: fmt.Sprintf(
					"the hook line's --timeout %s is not a positive deadline: fix it in the agent's settings (e.g. --timeout 30s, well under the agent's hook timeout)", opts.timeout)}
				e := ans.Encode(k, agent.Call{})
				_, _ = cmd.OutOrStdout().Write(e.Stdout)
				_, _ = io.WriteString(cmd.ErrOrStderr(), e.Stderr)
				return &exitError{code: e.Code}
			}
			// One deadline for the whole hook, reading the payload
			// included: an agent that times a hook out runs the
			// original command as if there were no hook, so cordon
			// must answer (deny, if need be) before any agent gives up.
			ctx, cancel := context.WithTimeout(context.Background(), opts.timeout)
			defer cancel()
			type result struct {
				call agent.Call
				ans  agent.Answer
			}
			done := make(chan result, 1)
			go func() {
				call, err := agent.Parse(k, cmd.InOrStdin())
				if err != nil {
					done <- result{call, agent.Answer{Verdict: agent.Deny, Failed: true, Reason: err.Error()}}
					return
				}
				done <- result{call, opts.answer(ctx, cmd, call)}
			}()
			var call agent.Call
			var ans agent.Answer
			select {
			case r := <-done:
				call, ans = r.call, r.ans
			case <-ctx.Done():
				// The work goes on in its goroutine until the process
				// exits, right after this answer.
				ans = agent.Answer{Verdict: agent.Deny, Failed: true, Reason: fmt.Sprintf(
					"cordon could not check the command within %s (--timeout): too complex to check; cordon refuses it", opts.timeout)}
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
	f.DurationVar(&opts.timeout, "timeout", hookTimeout, "answer within this long, with a deny when the check or the session is not done (keep it well under the agent's hook timeout)")
	f.DurationVar(&opts.askTimeout, "ask-timeout", 0, "in a session the hook made, hold an exec an ask rule covers this long for an answer from cordon session asks (0: deny at once)")
	return cmd
}

// answer decides call: the static check, then the session and the
// rewrite. It never returns an allow it could not back with a session.
func (o *hookOptions) answer(ctx context.Context, cmd *cobra.Command, call agent.Call) agent.Answer {
	fail := func(err error) agent.Answer {
		return agent.Answer{Verdict: agent.Deny, Failed: true, Reason: err.Error()}
	}
	switch {
	case call.NoShell:
		return agent.Answer{Verdict: agent.Pass}
	case call.Agent == agent.Cursor && call.Event == "beforeShellExecution":
		// That event's answer has no field for a new command: an allow
		// would run the command as written, outside cordon.
		return agent.Answer{Verdict: agent.Deny, Reason: "Cursor's beforeShellExecution hook cannot rewrite the command, so cordon cannot run it in its sandbox; " +
			"hook preToolUse on the Shell tool instead (cordon init cursor writes that) and remove cordon from beforeShellExecution"}
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
	if ctx.Err() != nil {
		// The caller has answered already; do not start a session.
		return fail(ctx.Err())
	}
	session, err := o.ensureSession(ctx, cmd, call, eff)
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
	ans.Reason = fmt.Sprintf("runs in cordon session %s under %s; every program it starts is decided by cordon when it runs", session, o.policyLabel(eff))
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
		case errors.Is(c.Err, shellcmd.ErrTooComplex):
			return policy.Deny, fmt.Sprintf("cordon: %v; cordon refuses it (split the command into simpler ones, or write it to a script file and run that)", c.Err)
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

// hookTimeout is the default deadline of a whole hook (--timeout). Claude
// Code and Gemini CLI give a hook 60 s by default, Cursor and Codex
// their own configured time, and all of them treat a hook that overruns
// as a non-blocking error, running the command as it was: the hook must
// answer, with a deny if need be, well before that.
const hookTimeout = 30 * time.Second

// policyLabel names the effective policy for the reason the agent reads:
// the file (or the built-in default) and the rule flags added to it.
func (o *hookOptions) policyLabel(eff *effectivePolicy) string {
	label := policyLabel(eff.loaded)
	var flags []string
	if len(o.deny) > 0 {
		flags = append(flags, "--deny")
	}
	if len(o.allow) > 0 {
		flags = append(flags, "--allow")
	}
	if len(flags) > 0 {
		label += " with " + strings.Join(flags, " and ") + " rules"
	}
	return label
}

// sessionIDPattern is what an agent's session id must look like to name
// a cordon session as it is; anything else is hashed. Compiled on first
// use: the {1,64} repetition makes a program of hundreds of instructions
// (0.13 ms and 860 allocations), which a package-level regexp would cost
// every start of this binary, the sandbox's init included.
var sessionIDPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
})

// hookSessionName is the cordon session an agent's session runs in.
func hookSessionName(id string) string {
	if sessionIDPattern().MatchString(id) {
		return "agent-" + id
	}
	sum := sha256.Sum256([]byte(id))
	return "agent-" + hex.EncodeToString(sum[:16])
}

// ensureSession returns the name of the agent session's cordon session,
// creating it (carry mode, the policy loaded here, the agent's directory
// writable) when it does not exist.
//
// The name carries a digest of the session's settings (the policy
// document, the sandbox flags, --idle, --ask-timeout): two hooks of one
// agent session configured differently (a user-level hook line and a
// project's with --deny, say) get two sessions, and neither runs under
// the other's policy. The directory is left out of the digest: the
// agent's cwd moves as its commands cd, and carry mode follows it.
func (o *hookOptions) ensureSession(ctx context.Context, cmd *cobra.Command, call agent.Call, eff *effectivePolicy) (string, error) {
	spec, err := o.specWith(cmd.Flags(), eff)
	if err != nil {
		return "", err
	}
	spec.Carry = true
	spec.IdleTimeout = sandbox.Duration(o.idle)
	spec.AskTimeout = sandbox.Duration(o.askTimeout)
	digest, err := specDigest(spec)
	if err != nil {
		return "", err
	}
	name := hookSessionName(call.Session) + "-" + digest
	spec.Name = name
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
	if _, err := c.CreateSession(ctx, spec); err != nil && !errors.Is(err, sandbox.ErrExists) {
		return "", fmt.Errorf("creating session %s: %w", name, err)
	}
	return name, nil
}

// specDigest is a short digest of what a hook's session is made with:
// the whole spec (so a setting added later counts too) but its name,
// directory and environment.
func specDigest(spec sandbox.SessionSpec) (string, error) {
	spec.Name, spec.Dir, spec.Env = "", "", nil
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("digesting the session's settings: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4]), nil
}
