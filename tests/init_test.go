package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// initExisting is a settings file per agent with settings and hooks of
// the user's own that init must keep.
var initExisting = map[string]struct{ path, doc string }{
	"claude": {".claude/settings.json", `{"permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/audit.sh", "timeout": 5}]}],
            "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}]},
  "model": "opus"}`},
	"codex": {".codex/hooks.json", `{"hooks": {"PreToolUse": [{"matcher": "apply_patch", "hooks": [{"type": "command", "command": "lint-patch"}]}],
  "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`},
	"gemini": {".gemini/settings.json", `{"theme": "GitHub", "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./check.sh", "name": "check"}]}]},
  "general": {"vimMode": true}}`},
	"cursor": {".cursor/hooks.json", `{"version": 1, "hooks": {"afterFileEdit": [{"command": ".cursor/hooks/format.sh"}], "preToolUse": [{"command": "./guard.sh", "matcher": "Write"}]}}`},
}

func TestInitMergesKeepsAndIsIdempotent(t *testing.T) {
	for _, agent := range hookAgents {
		t.Run(agent, func(t *testing.T) {
			dir := t.TempDir()
			ex := initExisting[agent]
			path := filepath.Join(dir, ex.path)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(ex.doc), 0o600))
			o := runOpts{dir: dir, env: []string{"HOME=" + t.TempDir()}}

			r := runCordon(t, o, "init", agent, "--dry-run")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stdout, "would change "+path)
			assert.Contains(t, r.stdout, "+ ", "the change is printed")
			assert.Contains(t, r.stdout, " hook "+agent)
			b, _ := os.ReadFile(path)
			assert.Equal(t, ex.doc, string(b), "--dry-run writes nothing")

			r = runCordon(t, o, "init", agent)
			require.Equal(t, 0, r.code, r.stderr)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			backup, err := os.ReadFile(path + ".cordon-backup")
			require.NoError(t, err)
			assert.Equal(t, ex.doc, string(backup), "the original is kept")
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the file's mode is kept")

			// Everything that was there is still there: the new document
			// minus cordon's entry is the old one.
			var oldDoc, newDoc any
			require.NoError(t, json.Unmarshal([]byte(ex.doc), &oldDoc))
			require.NoError(t, json.Unmarshal(after, &newDoc))
			hook := cordonBin + " hook " + agent
			assert.Equal(t, 1, strings.Count(string(after), hook), "one hook line, naming this binary")
			assert.Equal(t, oldDoc, withoutCordon(newDoc, hook), "other settings and hooks are untouched")

			r = runCordon(t, o, "init", agent)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stdout, "unchanged")
			again, _ := os.ReadFile(path)
			assert.Equal(t, string(after), string(again), "a second init changes nothing")

			r = runCordon(t, o, "init", agent, "--remove")
			require.Equal(t, 0, r.code, r.stderr)
			removed, _ := os.ReadFile(path)
			var remDoc any
			require.NoError(t, json.Unmarshal(removed, &remDoc))
			assert.Equal(t, oldDoc, remDoc, "--remove takes out exactly cordon's hook")
			backup, _ = os.ReadFile(path + ".cordon-backup")
			assert.Equal(t, ex.doc, string(backup), "the backup is the original still")
		})
	}
}

func TestInitNewFileUserScopeAndErrors(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	o := runOpts{dir: dir, env: []string{"HOME=" + home}}
	r := runCordon(t, o, "init", "gemini", "--user")
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Contains(t, string(b), `"matcher": "run_shell_command"`)
	_, err = os.Stat(filepath.Join(dir, ".gemini"))
	assert.True(t, os.IsNotExist(err), "--user leaves the project alone")

	r = runCordon(t, o, "init", "codex")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "codex_hooks = true", "init says what Codex needs besides the hook")

	bad := filepath.Join(dir, ".claude", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(bad), 0o755))
	require.NoError(t, os.WriteFile(bad, []byte(`{"hooks": [`), 0o644))
	r = runCordon(t, o, "init", "claude")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "not JSON")
	b, _ = os.ReadFile(bad)
	assert.Equal(t, `{"hooks": [`, string(b), "a file init cannot read is left alone")

	// --remove without an agent: every agent's file that exists.
	r = runCordon(t, o, "init", "--remove", "--user")
	require.Equal(t, 0, r.code, r.stderr)
	b, err = os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "hook gemini")
	r = runCordon(t, o, "init")
	assert.Equal(t, 125, r.code, "init without an agent installs nothing")

	r = runCordon(t, o, "init", "vim")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "want claude, codex, gemini or cursor")
}

// withoutCordon returns doc without the entries (and matcher groups left
// empty) that run hook.
func withoutCordon(doc any, hook string) any {
	switch v := doc.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if k == "hooks" {
				if list, ok := x.([]any); ok && len(list) > 0 {
					y := withoutCordon(list, hook).([]any)
					if len(y) == 0 {
						continue // the group held only cordon's hook
					}
					out[k] = y
					continue
				}
			}
			y := withoutCordon(x, hook)
			if list, ok := y.([]any); ok && len(list) == 0 {
				if orig, ok := x.([]any); ok && len(orig) > 0 {
					continue // an event list that held only cordon's entry
				}
			}
			out[k] = y
		}
		return out
	case []any:
		out := []any{}
		for _, x := range v {
			if m, ok := x.(map[string]any); ok {
				if m["command"] == hook {
					continue
				}
				if hs, ok := m["hooks"].([]any); ok && len(hs) == 1 {
					if h, ok := hs[0].(map[string]any); ok && h["command"] == hook {
						continue
					}
				}
			}
			out = append(out, withoutCordon(x, hook))
		}
		return out
	}
	return doc
}

// readmeBlock returns the first fenced block of kind lang after marker in
// the README.
func readmeBlock(t *testing.T, marker, lang string) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	s := string(readme)
	i := strings.Index(s, marker)
	require.GreaterOrEqual(t, i, 0, "README has %q", marker)
	j := strings.Index(s[i:], "```"+lang+"\n")
	require.GreaterOrEqual(t, j, 0)
	body := s[i+j+len("```"+lang+"\n"):]
	return body[:strings.Index(body, "```")]
}

// TestReadmeAgentLines: the lines the README says to paste are what init
// writes, and its whole-agent policy loads.
func TestReadmeAgentLines(t *testing.T) {
	for agent, marker := range map[string]string{
		"claude": "Claude Code, `.claude/settings.json`", "codex": "Codex, `.codex/hooks.json`",
		"gemini": "Gemini CLI, `.gemini/settings.json`", "cursor": "Cursor, `.cursor/hooks.json`",
	} {
		want := strings.ReplaceAll(readmeBlock(t, marker, "json"), "/usr/local/bin/cordon", cordonBin)
		dir := t.TempDir()
		r := runCordon(t, runOpts{dir: dir, env: []string{"HOME=" + t.TempDir()}}, "init", agent)
		require.Equal(t, 0, r.code, r.stderr)
		got, err := os.ReadFile(filepath.Join(dir, initExisting[agent].path))
		require.NoError(t, err)
		var w, g any
		require.NoError(t, json.Unmarshal([]byte(want), &w), "README block for %s", agent)
		require.NoError(t, json.Unmarshal(got, &g))
		assert.Equal(t, w, g, agent)
	}
}

// TestAgentWrapPolicies: each whole-agent policy in examples/agents loads,
// its examples hold, and in a real run the agent's state directory is
// writable while its settings file and the project's settings are not.
func TestAgentWrapPolicies(t *testing.T) {
	requireSeccompNotify(t)
	for _, tc := range []struct{ agent, state, settings string }{
		{"claude", ".claude", ".claude/settings.json"},
		{"codex", ".codex", ".codex/config.toml"},
		{"gemini", ".gemini", ".gemini/settings.json"},
		{"cursor", ".cursor", ".cursor/hooks.json"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			pol, err := filepath.Abs(filepath.Join("..", "examples", "agents", tc.agent+".yaml"))
			require.NoError(t, err)
			home := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(home, tc.state), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(home, tc.settings), []byte("{}\n"), 0o644))
			if tc.agent == "claude" {
				require.NoError(t, os.WriteFile(filepath.Join(home, ".claude.json"), []byte("{}\n"), 0o644))
			}
			o := runOpts{env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + t.TempDir()}}
			r := runCordon(t, o, "policy", "test", "--policy", pol)
			require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, "examples hold")

			script := `touch ~/` + tc.state + `/state && echo state-ok
echo x > ~/` + tc.settings + ` || echo settings-refused
mkdir ` + tc.state + ` || echo project-refused`
			r = runCordon(t, o, "--policy", pol, "--", "sh", "-c", script)
			assert.Contains(t, r.stdout, "state-ok", r.stderr)
			assert.Contains(t, r.stdout, "settings-refused")
			assert.Contains(t, r.stdout, "project-refused")
			b, _ := os.ReadFile(filepath.Join(home, tc.settings))
			assert.Equal(t, "{}\n", string(b), "the agent's settings are unchanged on the host")
			assert.FileExists(t, filepath.Join(home, tc.state, "state"), "its state is the host's")
		})
	}
	// The README's example is the shipped file's policy.
	readme := readmeBlock(t, "The Claude Code one, for instance", "yaml")
	b, err := os.ReadFile("../examples/agents/claude.yaml")
	require.NoError(t, err)
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	file := norm(string(b))
	for _, l := range strings.Split(strings.TrimSpace(readme), "\n") {
		assert.Contains(t, file, norm(l))
	}
}
