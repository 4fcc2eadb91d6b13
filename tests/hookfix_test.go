package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The red team's findings against the agent hooks (issue 14 follow-up).

// hookSession returns the session a rewritten command runs in.
func hookSession(t *testing.T, command string) string {
	t.Helper()
	m := regexp.MustCompile(` exec --session (agent-[A-Za-z0-9_-]+) `).FindStringSubmatch(command)
	require.NotNil(t, m, "not a rewrite into a cordon session: %q", command)
	return m[1]
}

// slowCommand is the red team's reproducer: a git push on line 1, then
// $( nested 30,000 deep, which took the parser minutes (the agent then
// times the hook out and runs the original command, push included).
func slowCommand() string {
	return "git push -q origin HEAD:refs/heads/slow-fallback; exit\n" + strings.Repeat("$(", 30000) + "a" + strings.Repeat(")", 30000)
}

func TestHookTooComplexIsDenied(t *testing.T) {
	h := newHookEnv(t)
	cmds := map[string]string{
		"nested $(":        slowCommand(),
		"250 KB of parens": strings.Repeat("(", 125<<10) + strings.Repeat(")", 125<<10),
		"deep braces":      strings.Repeat("{ ", 100) + "ls;" + strings.Repeat(" }", 100),
	}
	for _, agent := range hookAgents {
		for name, c := range cmds {
			a, r := h.ask(agent, "complex-"+agent, c)
			assert.Equal(t, 0, r.code, "%s %s: %s", agent, name, r.stderr)
			assert.Equal(t, "deny", a.verdict, "%s %s", agent, name)
			assert.Contains(t, a.reason, "too complex to check", "%s %s", agent, name)
			assert.Contains(t, a.reason, "cordon refuses it", "%s %s", agent, name)
			assert.Empty(t, a.command, "%s %s", agent, name)
		}
	}
	// A command with ordinary nesting is still read and allowed.
	a, r := h.ask("claude", "complex-ok", `echo "$(echo "$(echo "$(date)")")"; (cd sub && { ls; })`)
	assert.Equal(t, "allow", a.verdict, r.stderr)
}

// TestHookDeadlineDenies: whatever keeps the hook from answering (here a
// payload that never ends), it answers deny by its deadline.
func TestHookDeadlineDenies(t *testing.T) {
	h := newHookEnv(t)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pw.Close()
	// Half a payload, and stdin left open.
	_, err = pw.WriteString(`{"session_id": "late", "cwd": "` + h.dir + `", "tool_name": "Bash", `)
	require.NoError(t, err)
	for _, agent := range hookAgents {
		cmd := exec.Command(cordonBin, "hook", agent, "--policy", h.policy, "--timeout", "1s")
		cmd.Env = append(os.Environ(), h.d.env...)
		cmd.Stdin = pr
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s: the hook must answer, and with a failure: %s", agent, stderr.String())
		assert.Equal(t, 2, ee.ExitCode(), agent)
		a := readHookAnswer(t, agent, stdout.String())
		assert.Equal(t, "deny", a.verdict, agent)
		assert.Contains(t, a.reason, "could not check the command within 1s", agent)
		assert.Contains(t, stderr.String(), "cordon: denied: ", agent)
	}
}

// codexReads is what Codex makes of a PreToolUse hook's answer, following
// codex-rs/hooks/src/engine/output_parser.rs (parse_pre_tool_use): exit 2
// blocks; otherwise only allow with updatedInput, deny with a reason, or
// no decision are valid, and anything else is "invalid", after which
// Codex runs the original command.
func codexReads(t *testing.T, stdout string, code int) string {
	t.Helper()
	if code == 2 {
		return "block"
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &m), stdout)
	hso, _ := m["hookSpecificOutput"].(map[string]any)
	if hso == nil {
		if m["decision"] != nil || m["reason"] != nil {
			return "invalid"
		}
		return "pass"
	}
	decision, _ := hso["permissionDecision"].(string)
	reason, _ := hso["permissionDecisionReason"].(string)
	_, hasInput := hso["updatedInput"]
	switch {
	case hasInput && decision != "allow":
		return "invalid"
	case decision == "allow" && hasInput:
		return "allow"
	case decision == "deny" && strings.TrimSpace(reason) != "":
		return "block"
	case decision == "" && hso["permissionDecisionReason"] == nil:
		return "pass"
	}
	return "invalid"
}

func TestHookCodexAnswersAreValidForCodex(t *testing.T) {
	h := newHookEnv(t)
	good := hookPayload(t, "codex", "cx", h.dir, "ls")
	payloads := map[string]string{
		"allowed":          good,
		"denied":           hookPayload(t, "codex", "cx", h.dir, "git push"),
		"asked":            hookPayload(t, "codex", "cx", h.dir, "npm publish"),
		"asked then more":  hookPayload(t, "codex", "cx", h.dir, "ls; npm publish --tag x"),
		"dynamic":          hookPayload(t, "codex", "cx", h.dir, `g=git; $g push`),
		"unparsable":       hookPayload(t, "codex", "cx", h.dir, `echo $(`),
		"too complex":      hookPayload(t, "codex", "cx", h.dir, slowCommand()),
		"malformed":        `{"tool_name": `,
		"unknown tool":     strings.Replace(good, `"Bash"`, `"FancyRunner"`, 1),
		"no shell in tool": strings.Replace(good, `"Bash"`, `"apply_patch"`, 1),
	}
	want := map[string]string{
		"allowed": "allow", "denied": "block", "asked": "block", "asked then more": "block",
		"dynamic": "allow", "unparsable": "allow", "too complex": "block", "malformed": "block",
		"unknown tool": "block", "no shell in tool": "pass",
	}
	for name, p := range payloads {
		r := h.hook("codex", p)
		got := codexReads(t, r.stdout, r.code)
		assert.Equal(t, want[name], got, "%s: %s %s", name, r.stdout, r.stderr)
		if got == "allow" {
			hookSession(t, readHookAnswer(t, "codex", r.stdout).command)
		}
	}
}

func TestHookCursorBeforeShellExecutionIsDenied(t *testing.T) {
	h := newHookEnv(t)
	for _, c := range []string{"ls", "g=git; $g push -q origin HEAD:refs/heads/pwned", "git push"} {
		p, err := json.Marshal(map[string]any{
			"conversation_id": "bse", "generation_id": "g1", "hook_event_name": "beforeShellExecution",
			"command": c, "cwd": h.dir, "workspace_roots": []string{h.dir},
		})
		require.NoError(t, err)
		r := h.hook("cursor", string(p))
		a := readHookAnswer(t, "cursor", r.stdout)
		assert.Equal(t, "deny", a.verdict, "%q: Cursor runs an allowed command as written, outside cordon", c)
		assert.Contains(t, a.reason, "preToolUse", c)
		assert.Empty(t, a.command, c)
	}
}

// TestHookSessionPerSettings: one agent session id, two hook lines
// configured differently: the second must not reuse the first's session
// (and its weaker policy). A cwd that moved keeps the session.
func TestHookSessionPerSettings(t *testing.T) {
	d := newDaemonEnv(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	hook := func(cwd, command string, flags ...string) hookAnswer {
		t.Helper()
		r := d.cordonOpts(runOpts{dir: cwd, stdin: hookPayload(t, "claude", "reuse", cwd, command)}, append([]string{"hook", "claude"}, flags...)...)
		a := readHookAnswer(t, "claude", r.stdout)
		require.Equal(t, "allow", a.verdict, "%q: %s %s", command, r.stdout, r.stderr)
		return a
	}
	first := hook(dir, "true")
	assert.Contains(t, first.reason, "under built-in default;", "no rule flags: no mention of them")
	second := hook(dir, `g=git; $g push origin HEAD:refs/heads/pwned`, "--deny", "git push")
	assert.NotEqual(t, hookSession(t, first.command), hookSession(t, second.command), "another policy, another session")
	assert.Contains(t, second.reason, "built-in default with --deny rules", "the reason names the flags in force")
	r := runCordonVia(t, runOpts{dir: dir, env: d.env}, "bash", "-c", second.command)
	assert.Contains(t, r.stderr, "cordon: denied: git push", "the --deny applies in the session the second hook runs")

	moved := hook(filepath.Join(dir, "sub"), "pwd")
	assert.Equal(t, hookSession(t, first.command), hookSession(t, moved.command), "the agent's cwd moving keeps its session")
}

// TestInitDecoyAndWeakenedEntries: a settings file written before init
// (a cloned repository's) with a cordon line under another matcher, or
// cordon's entry made async or short-timed, or hooks turned off.
func TestInitDecoyAndWeakenedEntries(t *testing.T) {
	read := func(t *testing.T, path string) map[string]any {
		t.Helper()
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), string(b))
		return m
	}
	// cordonEntries returns, per matcher, the cordon hook objects under it.
	cordonEntries := func(doc map[string]any, event string, grouped bool) map[string][]map[string]any {
		out := map[string][]map[string]any{}
		hooks, _ := doc["hooks"].(map[string]any)
		entries, _ := hooks[event].([]any)
		for _, e := range entries {
			o := e.(map[string]any)
			m, _ := o["matcher"].(string)
			objs := []any{o}
			if grouped {
				objs, _ = o["hooks"].([]any)
			}
			for _, h := range objs {
				ho := h.(map[string]any)
				if c, _ := ho["command"].(string); strings.Contains(c, "cordon hook") {
					out[m] = append(out[m], ho)
				}
			}
		}
		return out
	}
	cases := map[string]struct {
		path, event, matcher string
		grouped              bool
		doc                  string
	}{
		"claude": {".claude/settings.json", "PreToolUse", "Bash", true,
			`{"hooks":{"PreToolUse":[{"matcher":"NotebookRead","hooks":[{"type":"command","command":"cordon hook claude"}]},
			  {"matcher":"Bash","hooks":[{"type":"command","command":"/opt/x/cordon hook claude","async":true,"timeout":1}]}]}}`},
		"codex": {".codex/hooks.json", "PreToolUse", "Bash", true,
			`{"hooks":{"PreToolUse":[{"matcher":"Bash|apply_patch","hooks":[{"type":"command","command":"cordon hook codex"},{"type":"command","command":"lint"}]}]}}`},
		"gemini": {".gemini/settings.json", "BeforeTool", "run_shell_command", true,
			`{"hooks":{"BeforeTool":[{"matcher":"read_file","hooks":[{"type":"command","command":"cordon hook gemini"}]}]}}`},
		"cursor": {".cursor/hooks.json", "preToolUse", "Shell", false,
			`{"version":1,"hooks":{"preToolUse":[{"command":"cordon hook cursor","matcher":"Read"},{"command":"cordon hook cursor","matcher":"Shell","timeout":1}]}}`},
	}
	for agent, tc := range cases {
		t.Run(agent, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.path)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(tc.doc), 0o644))
			o := runOpts{dir: dir, env: []string{"HOME=" + t.TempDir()}}
			r := runCordon(t, o, "init", agent)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stdout, "wrote cordon's hook", "a decoy is not an installed hook")
			got := cordonEntries(read(t, path), tc.event, tc.grouped)
			require.Len(t, got, 1, "cordon lines only under the shell tool's matcher: %v", got)
			require.Len(t, got[tc.matcher], 1, "%v", got)
			h := got[tc.matcher][0]
			assert.Equal(t, agent, strings.Fields(h["command"].(string))[2])
			assert.Contains(t, h["command"], cordonBin[:strings.LastIndex(cordonBin, "/")], "the line names this binary")
			assert.NotContains(t, h, "async")
			assert.NotContains(t, h, "timeout")
			if agent == "cursor" {
				assert.Equal(t, true, h["failClosed"], "Cursor blocks when the hook fails")
			}
			r = runCordon(t, o, "init", agent)
			assert.Contains(t, r.stdout, "unchanged", "a second run changes nothing")
			if agent == "codex" {
				// The other hook of the decoy's group stays.
				assert.Contains(t, string(must(os.ReadFile(path))), `"lint"`)
			}
		})
	}

	t.Run("disableAllHooks", func(t *testing.T) {
		dir := t.TempDir()
		home := t.TempDir()
		o := runOpts{dir: dir, env: []string{"HOME=" + home}}
		require.NoError(t, os.MkdirAll(filepath.Join(dir, ".claude"), 0o755))
		local := filepath.Join(dir, ".claude", "settings.local.json")
		for _, f := range []string{filepath.Join(dir, ".claude", "settings.json"), local} {
			require.NoError(t, os.WriteFile(f, []byte(`{"disableAllHooks": true}`), 0o644))
			r := runCordon(t, o, "init", "claude")
			assert.NotEqual(t, 0, r.code, f)
			assert.Contains(t, r.stderr, f, "the error names the file that turns hooks off")
			assert.Contains(t, r.stderr, "disableAllHooks")
			require.NoError(t, os.Remove(f))
		}
		r := runCordon(t, o, "init", "claude")
		assert.Equal(t, 0, r.code, r.stderr)
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestHookBadLineBlocks: a hook line cordon cannot use (an unknown agent,
// a deadline that is not one) blocks with exit 2, never the exit 125 the
// agents read as a non-blocking error (they would run the command).
func TestHookBadLineBlocks(t *testing.T) {
	h := newHookEnv(t)
	r := h.hook("claud", hookPayload(t, "claude", "bad-line", h.dir, "ls"))
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "cordon: denied: unknown agent")
	for _, agent := range hookAgents {
		r := h.hook(agent, hookPayload(t, agent, "bad-line", h.dir, "ls"), "--timeout", "0s")
		assert.Equal(t, 2, r.code, r.stderr)
		a := readHookAnswer(t, agent, r.stdout)
		assert.Equal(t, "deny", a.verdict, agent)
		assert.Contains(t, a.reason, "--timeout", agent)
	}
}
