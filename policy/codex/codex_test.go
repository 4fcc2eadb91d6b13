package codex

import (
	"errors"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `# A codex rules file.
prefix_rule(
    pattern = ["gh", "pr", "view"],
    decision = "prompt",
    justification = "viewing PRs needs a yes",
    match = ["gh pr view 7888", "gh pr view --repo openai/codex", ["gh", "pr", "view", "1", "--json", "title"]],
    not_match = ["gh pr --repo openai/codex view 7888", "gh issue view 1"],
)
prefix_rule(pattern = ["git", ["push", "fetch"]], decision = "forbidden",
    match = [["git", "push", "origin", "main"], "git fetch"], not_match = [["git", "status"]])
prefix_rule(pattern = ["ls"])
prefix_rule(pattern = ["cargo", "test"], decision = "allow", match = ["cargo test --all"], not_match = ["cargo --locked test", "cargo build"])
# Computed rules: Starlark, not a regex.
for tool in ["npm", "pnpm"]:
    prefix_rule(pattern = [tool, "publish"], decision = "forbidden")
`

func TestParse(t *testing.T) {
	f, err := Parse("default.rules", []byte(sample))
	require.NoError(t, err)
	assert.Equal(t, policy.FormatCodex, f.Format)
	cfg := f.Config
	require.Len(t, cfg.Rules, 6)
	assert.Equal(t, policy.Rule{Decision: policy.Ask, Pattern: "gh pr view", Message: "viewing PRs needs a yes", Source: "default.rules:2"}, cfg.Rules[0])
	assert.Equal(t, "git {push,fetch}", cfg.Rules[1].Pattern)
	assert.Equal(t, policy.Deny, cfg.Rules[1].Decision)
	assert.Equal(t, "ls ...", cfg.Rules[2].Pattern)
	assert.Equal(t, "npm publish", cfg.Rules[4].Pattern)
	assert.Equal(t, "default.rules:15", cfg.Rules[5].Source)
	assert.True(t, cfg.Builtins)

	p, err := policy.Compile(cfg)
	require.NoError(t, err)
	for argv, want := range map[string]policy.Decision{
		"gh pr view 1":         policy.Ask,
		"git push origin main": policy.Deny,
		"git -C . push":        policy.Deny, // cordon's deny matches every spelling
		"cargo test --all":     policy.Allow,
		"pnpm publish":         policy.Deny,
		"ls -la":               policy.Allow,
	} {
		assert.Equal(t, want, p.Decide(&policy.Exec{Argv: strings.Fields(argv), Path: strings.Fields(argv)[0]}).Decision, argv)
	}

	// In allowlist mode the allow rules are prefixes of exactly their
	// tokens, as in codex.
	cfg.Default = policy.Deny
	p, err = policy.Compile(cfg)
	require.NoError(t, err)
	for argv, want := range map[string]policy.Decision{
		"cargo test":                policy.Allow,
		"cargo test -- --nocapture": policy.Allow,
		"cargo --locked test":       policy.Deny,
		"cargo build":               policy.Deny,
		"ls":                        policy.Allow,
	} {
		assert.Equal(t, want, p.Decide(&policy.Exec{Argv: strings.Fields(argv), Path: strings.Fields(argv)[0]}).Decision, argv)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`prefix_rule(pattern = [])`, "x.rules:1: prefix_rule: pattern: empty"},
		{`prefix_rule(pattern = ["a"], decision = "maybe")`, `decision "maybe"`},
		{`prefix_rule(pattern = ["a", 1])`, "element 1"},
		{`prefix_rule(pattern = ["a", []])`, "empty list of alternatives"},
		{`prefix_rule(pattern = ["git", "push"], match = ["git status"])`, `match example "git status" does not match`},
		{`prefix_rule(pattern = ["git"], not_match = ["git status"])`, `not_match example "git status" matches`},
		{`prefix_rule(pattern = ["a"], bogus = 1)`, "unexpected keyword argument"},
		{`prefix_rule()`, "missing argument for pattern"},
		{`load("x.star", "y")`, "load"},
		{"prefix_rule(pattern = [\"a\"]\n", "x.rules:2"},
		{`undefined_fn()`, "undefined"},
		{`def f():
    for i in range(100000000):
        pass
f()`, "too many steps"},
		{`prefix_rule(pattern = ["./rel"])`, "not absolute"},
		{`prefix_rule(pattern = ["a"], match = [""])`, "empty command"},
	} {
		_, err := Parse("x.rules", []byte(tc.src))
		require.Error(t, err, tc.src)
		var pe *policy.ParseError
		assert.True(t, errors.As(err, &pe), "%s: %T", tc.src, err)
		assert.Contains(t, err.Error(), tc.want, tc.src)
	}
}

func TestLiteralTokens(t *testing.T) {
	// Tokens are literal: metacharacters of cordon's pattern language are
	// not special in a codex token.
	f, err := Parse("x.rules", []byte(`prefix_rule(pattern = ["echo", "*", "...", "$", "{a,b}", "[options]", "a b"], decision = "forbidden",
    match = [["echo", "*", "...", "$", "{a,b}", "[options]", "a b"]], not_match = [["echo", "x", "...", "$", "a", "[options]", "a b"]])`))
	require.NoError(t, err)
	assert.Empty(t, f.Warnings)
}

func TestNotMatchLooserDenyWarns(t *testing.T) {
	f, err := Parse("x.rules", []byte(`prefix_rule(pattern = ["git", "push"], decision = "forbidden", not_match = ["git -C . push"])`))
	require.NoError(t, err)
	require.Len(t, f.Warnings, 1)
	assert.Contains(t, f.Warnings[0], "x.rules:1: not_match example")
}

// FuzzParse: the importer never panics, is deterministic, and what it
// accepts compiles.
func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add(`prefix_rule(pattern = ["a", ["b", "c"]], decision = "prompt", match = ["a b"], not_match = [["a", "d"]])`)
	f.Add(`x = [str(i) for i in range(3)]
prefix_rule(pattern = x)`)
	f.Add(`prefix_rule(pattern = ["\\", "'", "\""], decision = "forbidden")`)
	f.Fuzz(func(t *testing.T, src string) {
		f1, err1 := Parse("f.rules", []byte(src))
		f2, err2 := Parse("f.rules", []byte(src))
		require.Equal(t, err1 == nil, err2 == nil)
		if err1 != nil {
			require.Equal(t, err1.Error(), err2.Error())
			return
		}
		require.Equal(t, f1, f2)
		_, err := policy.Compile(f1.Config)
		require.NoError(t, err)
	})
}
