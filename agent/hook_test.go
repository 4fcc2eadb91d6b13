package agent

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAndEncode(t *testing.T) {
	for _, tc := range []struct {
		kind    Kind
		payload string
		tool    string
		session string
		cwd     string
		dir     string
	}{
		{Claude, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"ls","timeout":5}}`, "Bash", "s", "/p", ""},
		{Codex, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":["ls","-l"]}}`, "Bash", "s", "/p", ""},
		{Gemini, `{"session_id":"s","cwd":"/p","tool_name":"run_shell_command","tool_input":{"command":"ls","dir_path":"sub"}}`, "run_shell_command", "s", "/p", "/p/sub"},
		{Cursor, `{"conversation_id":"c","workspace_roots":["/w"],"hook_event_name":"preToolUse","tool_name":"Shell","tool_input":{"command":"ls","cwd":"/w"}}`, "Shell", "c", "/w", ""},
		{Cursor, `{"conversation_id":"c","hook_event_name":"beforeShellExecution","command":"ls","cwd":"/w"}`, "Shell", "c", "/w", ""},
	} {
		c, err := Parse(tc.kind, strings.NewReader(tc.payload))
		require.NoError(t, err, tc.payload)
		assert.True(t, c.Shell)
		assert.Equal(t, tc.tool, c.Tool)
		assert.Equal(t, tc.session, c.Session)
		assert.Equal(t, tc.cwd, c.Cwd)
		assert.Equal(t, tc.dir, c.Dir)
		assert.NotEmpty(t, c.Command)

		e := Answer{Verdict: Allow, Command: "X"}.Encode(tc.kind, c)
		assert.Equal(t, 0, e.Code)
		assert.True(t, json.Valid(e.Stdout))
		assert.Contains(t, string(e.Stdout), `"command":"X"`)
		if tc.kind == Claude {
			assert.Contains(t, string(e.Stdout), `"timeout":5`, "other tool_input fields are kept")
		}
		e = Answer{Verdict: Deny, Reason: "no", Failed: true}.Encode(tc.kind, c)
		assert.Equal(t, 2, e.Code)
		assert.Equal(t, "cordon: denied: no\n", e.Stderr)
		assert.NotContains(t, string(e.Stdout), "allow")
	}
}

// FuzzParse: whatever the payload, Parse either fails with ErrPayload or
// returns a call whose command is within the limits, and Encode of a
// failure is never an allow.
func FuzzParse(f *testing.F) {
	f.Add(`{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"ls"}}`)
	f.Add(`{"conversation_id":"c","hook_event_name":"beforeShellExecution","command":"ls"}`)
	f.Add(`{"tool_name":"Bash","tool_input":null}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, payload string) {
		for _, k := range Kinds {
			c, err := Parse(k, strings.NewReader(payload))
			if err != nil {
				e := Answer{Verdict: Deny, Failed: true, Reason: err.Error()}.Encode(k, c)
				if !json.Valid(e.Stdout) || e.Code != 2 || strings.Contains(string(e.Stdout), `"allow"`) {
					t.Fatalf("%s: failure answer %s (code %d)", k, e.Stdout, e.Code)
				}
				continue
			}
			if c.Shell && (strings.ContainsRune(c.Command, 0) || c.Command == "" || len(c.Command) > MaxCommand || c.Session == "" || c.Cwd == "") {
				t.Fatalf("%s: a shell call without what the hook needs: %+v", k, c)
			}
		}
	})
}

// TestQuoteRoundTrip: bash reads every quoted word back as it was.
func TestQuoteRoundTrip(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	words := []string{"", "a", "it's", `"$HOME"`, "$(rm -rf /)", "`id`", "a b\tc\nd", `\`, "'", "''", "!x", "*", "~", "-c", "%s", "é"}
	var q []string
	for _, w := range words {
		q = append(q, Quote(w))
	}
	out, err := exec.Command(bash, "-c", "for a in "+strings.Join(q, " ")+`; do printf '%s\0' "$a"; done`).Output()
	require.NoError(t, err)
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	assert.Equal(t, words, got)
}

func TestInstallRemoveKeepOrder(t *testing.T) {
	doc := []byte(`{"z": 1, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "mine"}]}]}, "a": [1.50, "x"]}`)
	out, changed, err := Install(Claude, doc, "/bin/cordon hook claude")
	require.NoError(t, err)
	require.True(t, changed)
	s := string(out)
	assert.Less(t, strings.Index(s, `"z"`), strings.Index(s, `"hooks"`))
	assert.Less(t, strings.Index(s, `"hooks"`), strings.Index(s, `"a"`))
	assert.Contains(t, s, "1.50", "numbers are written as they were")
	again, changed, err := Install(Claude, out, "/bin/cordon hook claude")
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, out, again)
	moved, changed, err := Install(Claude, out, "/opt/cordon hook claude")
	require.NoError(t, err)
	assert.True(t, changed, "a new binary path replaces the old line")
	assert.Equal(t, 1, strings.Count(string(moved), "hook claude"))
	back, changed, err := Remove(Claude, moved)
	require.NoError(t, err)
	assert.True(t, changed)
	var want, got any
	require.NoError(t, json.Unmarshal(doc, &want))
	require.NoError(t, json.Unmarshal(back, &got))
	assert.Equal(t, want, got)
	_, _, err = Install(Claude, []byte(`{"hooks": []}`), "c")
	assert.ErrorContains(t, err, "not an object")
}

// TestCodexNeverGetsAsk: Codex reads "ask", and updatedInput without
// "allow", as an invalid answer and runs the original command.
func TestCodexNeverGetsAsk(t *testing.T) {
	c, err := Parse(Codex, strings.NewReader(`{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"npm publish"}}`))
	require.NoError(t, err)
	for _, a := range []Answer{
		{Verdict: Ask, Command: "X", Reason: `ask "npm publish"`},
		{Verdict: Deny},
	} {
		var out struct {
			HSO map[string]any `json:"hookSpecificOutput"`
		}
		require.NoError(t, json.Unmarshal(a.Encode(Codex, c).Stdout, &out))
		assert.Equal(t, "deny", out.HSO["permissionDecision"])
		assert.NotContains(t, out.HSO, "updatedInput")
		assert.NotEmpty(t, strings.TrimSpace(out.HSO["permissionDecisionReason"].(string)), "Codex needs a reason with a deny")
	}
}
