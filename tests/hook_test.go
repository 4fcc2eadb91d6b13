package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hookAgents are the agents "cordon hook" speaks for, each with a golden
// payload in testdata/hooks (taken from the agent's published docs).
var hookAgents = []string{"claude", "codex", "gemini", "cursor"}

// hookPolicy is the policy the hook tests name with --policy.
const hookPolicy = `version: 1
rules:
  - deny: git push
    message: pushing is for people; open a pull request instead
  - ask: npm publish
`

// hookPayload fills the agent's golden payload.
func hookPayload(t *testing.T, agent, session, cwd, command string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hooks", agent+".json"))
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	cmd, err := json.Marshal(command)
	require.NoError(t, err)
	cwdJSON, err := json.Marshal(cwd)
	require.NoError(t, err)
	s := strings.Join(lines, "\n")
	s = strings.ReplaceAll(s, `"{{CWD}}"`, string(cwdJSON))
	s = strings.ReplaceAll(s, "{{SESSION}}", session)
	s = strings.ReplaceAll(s, "{{COMMAND}}", string(cmd))
	require.True(t, json.Valid([]byte(s)), "golden payload %s is not JSON after filling:\n%s", agent, s)
	return s
}

// hookAnswer is an answer read back from the agent's format.
type hookAnswer struct {
	verdict string // allow, ask, deny, or "" (no opinion)
	reason  string
	command string // the rewritten command, if any
}

// readHookAnswer parses stdout as the agent would. It fails the test when
// stdout is not the agent's JSON shape.
func readHookAnswer(t *testing.T, agent, stdout string) hookAnswer {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &m), "the answer must be one JSON object: %q", stdout)
	str := func(m map[string]any, k string) string {
		s, _ := m[k].(string)
		return s
	}
	var a hookAnswer
	switch agent {
	case "claude", "codex":
		hso, ok := m["hookSpecificOutput"].(map[string]any)
		if !ok {
			require.Empty(t, m, "no hookSpecificOutput: the answer must be {}")
			return a
		}
		assert.Equal(t, "PreToolUse", hso["hookEventName"])
		a.verdict, a.reason = str(hso, "permissionDecision"), str(hso, "permissionDecisionReason")
		if in, ok := hso["updatedInput"].(map[string]any); ok {
			a.command = str(in, "command")
		}
	case "gemini":
		a.verdict, a.reason = str(m, "decision"), str(m, "reason")
		if hso, ok := m["hookSpecificOutput"].(map[string]any); ok {
			if in, ok := hso["tool_input"].(map[string]any); ok {
				a.command = str(in, "command")
			}
		}
	case "cursor":
		a.verdict, a.reason = str(m, "permission"), str(m, "agent_message")
		if a.reason == "" {
			a.reason = str(m, "user_message")
		}
		if in, ok := m["updated_input"].(map[string]any); ok {
			a.command = str(in, "command")
		}
	}
	return a
}

// hookEnv is a daemon location, a project directory and a policy file.
type hookEnv struct {
	d      *daemonEnv
	dir    string
	policy string
}

func newHookEnv(t *testing.T) *hookEnv {
	d := newDaemonEnv(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644))
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(hookPolicy), 0o644))
	return &hookEnv{d: d, dir: dir, policy: pol}
}

// hook runs "cordon hook AGENT" on payload.
func (h *hookEnv) hook(agent, payload string, extra ...string) result {
	h.d.t.Helper()
	args := append([]string{"hook", agent, "--policy", h.policy}, extra...)
	return h.d.cordonOpts(runOpts{dir: h.dir, stdin: payload}, args...)
}

// ask runs command through the hook of agent in session and returns the
// answer.
func (h *hookEnv) ask(agent, session, command string) (hookAnswer, result) {
	h.d.t.Helper()
	r := h.hook(agent, hookPayload(h.d.t, agent, session, h.dir, command))
	return readHookAnswer(h.d.t, agent, r.stdout), r
}

// runRewritten runs the rewritten command with bash -c, as the agents'
// shell tools run a command, in the project directory.
func (h *hookEnv) runRewritten(command string) result {
	h.d.t.Helper()
	return runCordonVia(h.d.t, runOpts{dir: h.dir, env: h.d.env, timeout: 60 * time.Second}, "bash", "-c", command)
}

func TestHookDeniesStaticallyAndRewrites(t *testing.T) {
	h := newHookEnv(t)
	for _, agent := range hookAgents {
		t.Run(agent, func(t *testing.T) {
			for _, cmd := range []string{"git push origin main", "cd x && git -C . push", "ls; (git push -f)"} {
				a, r := h.ask(agent, "s-"+agent, cmd)
				assert.Equal(t, 0, r.code, "a decision is exit 0: %s", r.stderr)
				assert.Equal(t, "deny", a.verdict, "%q", cmd)
				assert.Contains(t, a.reason, `deny "git push"`, "the reason names the rule")
				assert.Contains(t, a.reason, "open a pull request", "and its message")
				assert.Empty(t, a.command, "a denied command is not rewritten")
			}

			a, r := h.ask(agent, "s-"+agent, "ls")
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, "allow", a.verdict, r.stdout)
			assert.Regexp(t, ` exec --session agent-s-`+agent+`-[0-9a-f]{8} --shell bash -c ls$`, a.command)
			out := h.runRewritten(a.command)
			assert.Equal(t, 0, out.code, out.stderr)
			assert.Contains(t, out.stdout, "README", "ls ran in the project directory")
		})
	}
}

func TestHookSessionCarriesAndDecidesAtExec(t *testing.T) {
	h := newHookEnv(t)
	run := func(agent, session, cmd string) result {
		t.Helper()
		a, r := h.ask(agent, session, cmd)
		require.Equal(t, "allow", a.verdict, "%q: %s %s", cmd, r.stdout, r.stderr)
		return h.runRewritten(a.command)
	}
	for _, agent := range []string{"claude", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			s := "carry-" + agent
			r := run(agent, s, "cd sub && export X=1 && echo moved")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "moved\n", r.stdout)
			r = run(agent, s, `pwd; echo "X=$X"`)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, filepath.Join(h.dir, "sub")+"\nX=1\n", r.stdout, "cd and export persist between calls")

			// Bash syntax works: the session's shell is bash.
			r = run(agent, s, `[[ -n $X ]] && echo bash`)
			assert.Equal(t, "bash\n", r.stdout, r.stderr)

			// Words the hook cannot read statically: the supervisor
			// decides the nested git push when it is exec'd.
			r = run(agent, s, `sh -c "git $(echo push) origin main"; echo "rc=$?"`)
			assert.Contains(t, r.stderr, "cordon: denied: git push origin main")
			assert.Contains(t, r.stdout, "rc=126")

			// Another agent session has its own state.
			r = run(agent, s+"-other", "pwd")
			assert.Equal(t, h.dir+"\n", r.stdout, r.stderr)
		})
	}
	a, _ := h.ask("claude", "carry-claude", "true")
	name := hookSession(t, a.command)
	ls := h.d.cordon("session", "ls")
	assert.Contains(t, ls.stdout, name)
	rm := h.d.cordon("session", "rm", name)
	require.Equal(t, 0, rm.code, rm.stderr)
	assert.NotContains(t, h.d.cordon("session", "ls").stdout, name)
}

func TestHookAskRule(t *testing.T) {
	h := newHookEnv(t)
	for _, agent := range hookAgents {
		a, r := h.ask(agent, "ask-"+agent, "npm publish")
		require.Equal(t, 0, r.code, r.stderr)
		if agent == "gemini" || agent == "codex" {
			// Gemini's hooks cannot ask; Codex reads an ask as an
			// invalid answer and runs the original command.
			assert.Equal(t, "deny", a.verdict, "%s's hooks cannot ask: deny", agent)
			assert.Contains(t, a.reason, "cannot request", agent)
			assert.Contains(t, a.reason, `ask "npm publish"`, agent)
			assert.Contains(t, a.reason, "allow rule", "%s: the reason says how to allow it", agent)
			assert.Empty(t, a.command, agent)
			continue
		}
		assert.Equal(t, "ask", a.verdict, agent)
		assert.Contains(t, a.reason, `ask "npm publish"`, agent)
		assert.Contains(t, a.command, "--session agent-ask-"+agent, "approved, it still runs under cordon")
	}
}

func TestHookBadInputIsAWellFormedDeny(t *testing.T) {
	h := newHookEnv(t)
	huge := "echo " + strings.Repeat("a", 300<<10)
	for _, agent := range hookAgents {
		t.Run(agent, func(t *testing.T) {
			good := hookPayload(t, agent, "bad", h.dir, "ls")
			cases := []struct {
				name    string
				payload string
				code    int
				reason  string
			}{
				{"malformed JSON", `{"tool_name": "Bash", `, 2, "not a JSON object"},
				{"not an object", `[1, 2]`, 2, "not a JSON object"},
				{"missing command", strings.Replace(good, `"command": "ls"`, `"commandx": "ls"`, 1), 2, "command is missing"},
				{"command of the wrong type", strings.Replace(good, `"command": "ls"`, `"command": 7`, 1), 2, "not a string"},
				{"missing session", strings.NewReplacer(`"session_id": "bad"`, `"session_idx": "bad"`, `"conversation_id": "bad"`, `"conversation_idx": "bad"`).Replace(good), 2, "no "},
				{"unknown tool", strings.NewReplacer(`"Bash"`, `"FancyRunner"`, `"run_shell_command"`, `"FancyRunner"`, `"Shell"`, `"FancyRunner"`).Replace(good), 0, "does not know the tool"},
				{"huge command", hookPayload(t, agent, "bad", h.dir, huge), 2, "over cordon's limit"},
				{"git push in a huge command", hookPayload(t, agent, "bad", h.dir, huge+"; git push"), 2, "over cordon's limit"},
			}
			for _, tc := range cases {
				r := h.hook(agent, tc.payload)
				a := readHookAnswer(t, agent, r.stdout)
				assert.Equal(t, tc.code, r.code, "%s: exit code (stderr %s)", tc.name, r.stderr)
				assert.Equal(t, "deny", a.verdict, "%s: never an allow", tc.name)
				assert.Empty(t, a.command, tc.name)
				assert.Contains(t, a.reason, tc.reason, tc.name)
				if tc.code == 2 {
					assert.Contains(t, r.stderr, "cordon: denied: ", "%s: exit 2 carries the reason on stderr", tc.name)
				}
			}
		})
	}
	// A tool that runs no shell command gets no opinion.
	r := h.hook("claude", strings.Replace(hookPayload(t, "claude", "x", h.dir, "ls"), `"Bash"`, `"Read"`, 1))
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "{}\n", r.stdout)
}

func TestHookUntrustedPolicyDenies(t *testing.T) {
	d := newDaemonEnv(t)
	dir := t.TempDir()
	require.NoError(t, exec.Command("git", "init", "-q", dir).Run())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cordon.yaml"), []byte(hookPolicy), 0o644))
	for _, agent := range hookAgents {
		r := d.cordonOpts(runOpts{dir: dir, stdin: hookPayload(t, agent, "u", dir, "ls")}, "hook", agent)
		a := readHookAnswer(t, agent, r.stdout)
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Equal(t, "deny", a.verdict, agent)
		assert.Contains(t, a.reason, "cordon policy trust", agent)
	}
	// Once trusted, the same call is allowed and the file's rules apply.
	require.Equal(t, 0, d.cordonOpts(runOpts{dir: dir}, "policy", "trust", "cordon.yaml").code)
	r := d.cordonOpts(runOpts{dir: dir, stdin: hookPayload(t, "claude", "u", dir, "git push")}, "hook", "claude")
	assert.Equal(t, "deny", readHookAnswer(t, "claude", r.stdout).verdict, r.stderr)
	r = d.cordonOpts(runOpts{dir: dir, stdin: hookPayload(t, "claude", "u", dir, "ls")}, "hook", "claude")
	assert.Equal(t, "allow", readHookAnswer(t, "claude", r.stdout).verdict, r.stderr)
}

func TestHookSessionEndsWhenIdle(t *testing.T) {
	h := newHookEnv(t)
	a, r := h.ask("claude", "idle", "true")
	require.Equal(t, "allow", a.verdict, r.stderr)
	r = h.hook("claude", hookPayload(t, "claude", "idle2", h.dir, "true"), "--idle", "1s")
	require.Equal(t, "allow", readHookAnswer(t, "claude", r.stdout).verdict, r.stderr)
	// No bound on how soon: only that it ends, and the other one stays.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && strings.Contains(h.d.cordon("session", "ls").stdout, "agent-idle2") {
		time.Sleep(200 * time.Millisecond)
	}
	ls := h.d.cordon("session", "ls").stdout
	assert.NotContains(t, ls, "agent-idle2", "the idle session was closed")
	assert.Contains(t, ls, "agent-idle-", "the session with the default idle timeout is still there")
}

// TestHookRewriteKeepsTheCommandExact: whatever the command holds (quotes
// of both kinds, backslashes, $(...), newlines, a heredoc, a would-be
// breakout of the rewrite's quoting), the rewritten command runs exactly
// it, inside the session: its output is what bash gives for the original.
func TestHookRewriteKeepsTheCommandExact(t *testing.T) {
	h := newHookEnv(t)
	cmds := []string{
		`printf '%s|' "it's" 'a\b' "$((1+2))" \$HOME; echo`,
		"echo one\necho 'two\n  lines'\ncat <<'EOF'\n$not $(expanded)\nEOF",
		`echo '; echo broke-out; '"'"`,
		`x='a b'; for w in $x; do echo "[$w]"; done`,
		`echo "$(echo nested "$(echo deeper)")"; echo ~root`,
	}
	for _, agent := range hookAgents {
		for i, c := range cmds {
			a, r := h.ask(agent, "exact-"+agent, c)
			require.Equal(t, "allow", a.verdict, "%q: %s", c, r.stderr)
			got := h.runRewritten(a.command)
			want := runCordonVia(t, runOpts{dir: h.dir}, "bash", "-c", c)
			assert.Equal(t, want.stdout, got.stdout, "%s command %d: %q (stderr %s)", agent, i, c, got.stderr)
			assert.Equal(t, want.code, got.code, "%s command %d", agent, i)
		}
	}
}
