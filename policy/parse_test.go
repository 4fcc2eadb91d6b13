package policy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const issueExample = `version: 1
default: allow            # or deny: allowlist mode
defaults: true            # built-in deny list
rules:
  - deny: git push
    message: pushing is not allowed here; open a pull request instead
  - deny: git push {--force,-f,--force-with-lease}
  - allow: git push origin feature/*
  - ask: npm publish
examples:
  - deny: [git, -C, ., push, origin, main]
  - allow: [git, log, --grep, push]
`

func TestParseIssueExample(t *testing.T) {
	f, err := Parse("cordon.yaml", []byte(issueExample))
	require.NoError(t, err)
	assert.Equal(t, FormatCordon, f.Format)
	assert.Empty(t, f.Warnings)
	cfg := f.Config
	assert.Equal(t, Allow, cfg.Default)
	assert.True(t, cfg.Builtins)
	require.Len(t, cfg.Rules, 4)
	assert.Equal(t, Rule{Decision: Deny, Pattern: "git push", Source: "cordon.yaml:5",
		Message: "pushing is not allowed here; open a pull request instead"}, cfg.Rules[0])
	assert.Equal(t, "cordon.yaml:8", cfg.Rules[2].Source)
	assert.Equal(t, Ask, cfg.Rules[3].Decision)
	require.Len(t, cfg.Examples, 2)
	assert.Equal(t, Example{Decision: Deny, Argv: fields("git -C . push origin main"), Source: "cordon.yaml:11"}, cfg.Examples[0])

	p, err := Compile(cfg)
	require.NoError(t, err)
	r := decideArgv(p, fields("git push origin main")...)
	assert.Equal(t, `deny "git push": pushing is not allowed here; open a pull request instead`, r.RuleText())
}

func TestParseForms(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		data  string
		check func(t *testing.T, f *File)
	}{
		{"empty", "cordon.yaml", "", func(t *testing.T, f *File) {
			assert.Equal(t, Config{Default: Allow, Builtins: true}, f.Config)
		}},
		{"comment only", "cordon.yaml", "# nothing\n", func(t *testing.T, f *File) {
			assert.Empty(t, f.Config.Rules)
		}},
		{"allowlist", "cordon.yaml", "default: deny\ndefaults: false\nrules:\n  - allow: ls\n", func(t *testing.T, f *File) {
			assert.Equal(t, Deny, f.Config.Default)
			assert.False(t, f.Config.Builtins)
		}},
		{"list form keeps words", "cordon.yaml", "rules:\n  - deny: [git, commit, -m, \"a b\"]\n", func(t *testing.T, f *File) {
			require.Len(t, f.Config.Rules, 1)
			assert.Equal(t, `git commit -m a\ b`, f.Config.Rules[0].Pattern)
			words, err := splitWords(f.Config.Rules[0].Pattern)
			require.NoError(t, err)
			assert.Equal(t, "a b", words[3].text)
		}},
		{"example as string", "cordon.yaml", "examples:\n  - allow: git status -s\n", func(t *testing.T, f *File) {
			assert.Equal(t, fields("git status -s"), f.Config.Examples[0].Argv)
		}},
		{"json", "cordon.json", `{"version": 1, "default": "deny",
  "rules": [{"allow": "git status"}, {"deny": ["git", "push"], "message": "no"}]}`, func(t *testing.T, f *File) {
			assert.Equal(t, Deny, f.Config.Default)
			require.Len(t, f.Config.Rules, 2)
			assert.Equal(t, "cordon.json:2", f.Config.Rules[1].Source)
		}},
		{"anchors", "cordon.yaml", "rules:\n  - &r {deny: git push}\n  - *r\n", func(t *testing.T, f *File) {
			assert.Len(t, f.Config.Rules, 2)
		}},
		{"null sections", "cordon.yaml", "rules:\nexamples:\n", func(t *testing.T, f *File) {
			assert.Empty(t, f.Config.Rules)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.file, []byte(tc.data))
			require.NoError(t, err)
			tc.check(t, f)
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"unknown rule key", "version: 1\nrules:\n  - deny: git push\n  - allow: ls\n  - ask: npm publish\n\n  - denyy: rm\n",
			`cordon.yaml:7: rule 4: unknown key "denyy" (want deny, allow, ask, message)`},
		{"unknown top key", "version: 1\nrule:\n  - deny: x\n",
			`cordon.yaml:2: unknown key "rule" (want version, default, defaults, deny_writable_exec, `},
		{"bad version", "version: 2\n", `cordon.yaml:1: unsupported version "2" (want 1)`},
		{"bad default", "default: maybe\n", `cordon.yaml:1: default: unknown decision "maybe" (want allow, ask or deny)`},
		{"bad defaults", "defaults: yes\n", `cordon.yaml:1: defaults: want true or false`},
		{"two decisions", "rules:\n  - deny: a\n    allow: b\n", `cordon.yaml:3: rule 1: both deny and allow (want one decision per rule)`},
		{"no decision", "rules:\n  - message: hi\n", `cordon.yaml:2: rule 1: no decision (want one of deny, allow, ask)`},
		{"bad pattern", "rules:\n  - deny: git\n  - deny: git {push\n", `cordon.yaml:3: rule 2: deny "git {push": unclosed "{"`},
		{"empty pattern", "rules:\n  - deny: \"\"\n", `cordon.yaml:2: rule 1: deny "": empty rule`},
		{"message not string", "rules:\n  - deny: a\n    message: [x]\n", `cordon.yaml:3: rule 1: message: want a string`},
		{"rules not list", "rules: git push\n", `cordon.yaml:1: rules: want a list`},
		{"rule not mapping", "rules:\n  - git push\n", `cordon.yaml:2: rule 1: want a mapping with one of deny, allow, ask`},
		{"duplicate key", "default: deny\ndefault: allow\n", `cordon.yaml:2: duplicate key "default"`},
		{"example unknown key", "examples:\n  - denied: [a]\n", `cordon.yaml:2: example 1: unknown key "denied" (want deny, allow, ask)`},
		{"example two keys", "examples:\n  - deny: [a]\n    allow: [b]\n", `cordon.yaml:2: example 1: want exactly one of deny, allow, ask`},
		{"example empty", "examples:\n  - deny: []\n", `cordon.yaml:2: example 1: empty command`},
		{"syntax", "rules:\n  - deny: git\n  - deny: 'x\n", `cordon.yaml:3: found unexpected end of stream`},
		{"tab", "default: deny\n\tdefaults: true\n", `cordon.yaml:2: found a tab character that violates indentation`},
		// The YAML library names the line its enclosing block began on;
		// the error names the line the mistake is on, and shows it.
		{"indent of a later rule", "rules:\n  - deny: git push\n   - allow: ls\n", `cordon.yaml:3: did not find expected '-' indicator: "   - allow: ls"`},
		{"key outside its rule", "rules:\n  - deny: git push\n  message: x\n", `cordon.yaml:3: did not find expected '-' indicator: "  message: x"`},
		{"after a multi-line flow", "rules:\n  - deny: [git,\n      push]\n   - bad\n", `cordon.yaml:4: did not find expected '-' indicator: "   - bad"`},
		{"top level list", "- deny: x\n", `cordon.yaml:1: the top level must be a mapping`},
		{"two documents", "default: deny\n---\ndefault: allow\n", `cordon.yaml:2: more than one YAML document`},
		{"mixed formats", "rules: []\ncommand: {}\n", `cordon.yaml:2: "command" is a fence key`},
		{"program option", "rules:\n  - deny: --force\n", `cordon.yaml:2: rule 1: deny "--force": program "--force" starts with '-'`},
		{"relative path", "rules:\n  - deny: ./x\n", `program path "./x" is not absolute`},
		{"mixed alternatives", "rules:\n  - deny: git {push,-f}\n", `mixes options and words`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("cordon.yaml", []byte(tc.data))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var pe *ParseError
			assert.True(t, errors.As(err, &pe), "want a *ParseError, got %T", err)
		})
	}
}

func TestExamplesChecked(t *testing.T) {
	data := `rules:
  - deny: git push
examples:
  - deny: [git, -C, ., push]
  - allow: [git, push, origin]
  - allow: [git, status]
  - deny: [git, log]
`
	f, err := Parse("cordon.yaml", []byte(data))
	require.NoError(t, err)
	_, err = Compile(f.Config)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cordon.yaml:5: example git push origin: got deny (deny "git push"), want allow`)
	assert.Contains(t, err.Error(), `cordon.yaml:7: example git log: got allow (default allow), want deny`)
	assert.NotContains(t, err.Error(), "cordon.yaml:4")
	var ee *ExampleError
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, "cordon.yaml:5", ee.Example.Source)
}

func TestCompileErrorsNameSource(t *testing.T) {
	_, err := Compile(Config{Rules: []Rule{{Decision: Deny, Pattern: "git {a", Source: "--deny"}}})
	require.Error(t, err)
	assert.Equal(t, `--deny: deny "git {a": unclosed "{"`, err.Error())
	_, err = Compile(Config{Rules: []Rule{{Decision: Deny, Pattern: "  "}}})
	assert.ErrorIs(t, err, ErrEmptyRule)
}

const fenceConfig = `{
  // fence config with comments and trailing commas
  "$schema": "https://example.invalid/fence.schema.json",
  "extends": "code",
  "network": {"allowedDomains": ["github.com"]},
  "command": {
    "deny": ["git push", "npm publish", "dd if=",],
    "allow": ["git push origin docs"],
    /* block comment */
    "useDefaults": false,
    "runtimeExecPolicy": "argv",
  },
}
`

func TestParseFence(t *testing.T) {
	f, err := Parse("fence.json", []byte(fenceConfig))
	require.NoError(t, err)
	assert.Equal(t, FormatFence, f.Format)
	cfg := f.Config
	assert.False(t, cfg.Builtins)
	assert.Equal(t, Allow, cfg.Default)
	require.Len(t, cfg.Rules, 4)
	assert.Equal(t, Rule{Decision: Deny, Pattern: "git push", Source: "fence.json:7"}, cfg.Rules[0])
	assert.Equal(t, Rule{Decision: Allow, Pattern: "git push origin docs", Source: "fence.json:8", Override: true}, cfg.Rules[3])
	require.Len(t, f.Warnings, 1)
	assert.Contains(t, f.Warnings[0], `fence.json:4: fence key "extends" is not followed`)
	// network.allowedDomains became a network rule (ports 80 and 443).
	require.NotNil(t, cfg.Network)
	require.Len(t, cfg.Network.Rules, 1)
	assert.Equal(t, NetRule{Decision: Allow, Host: "github.com", Pattern: "github.com", Source: "fence.json:5"}, cfg.Network.Rules[0])
	assert.Empty(t, f.Notices)

	p, err := Compile(cfg)
	require.NoError(t, err)
	assert.Equal(t, Deny, decideArgv(p, fields("git push origin main")...).Decision)
	assert.Equal(t, Allow, decideArgv(p, fields("git push origin docs")...).Decision)
	assert.Equal(t, Deny, decideArgv(p, fields("dd of=x if=/dev/zero")...).Decision)
}

func TestParseFenceShapes(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		data    string
		builtin bool
		err     string
	}{
		{"defaults on when omitted", "fence.json", `{"command": {"deny": ["git push"]}}`, true, ""},
		{"useDefaults null", "x.json", `{"command": {"useDefaults": null}}`, true, ""},
		{"jsonc under another name", "policy", "{\"command\": {\"deny\": [\"a\"],}, // c\n}", true, ""},
		{"only fence keys", "fence.json", `{"network": {}, "filesystem": {}}`, true, ""},
		{"fence network lists", "fence.json", `{"network": {"deniedDomains": ["x.example"]}}`, true, ""},
		{"unknown command key", "fence.json", "{\"command\": {\n\"denny\": []}}", false, `fence.json:2: command: unknown key "denny"`},
		{"deny not list", "fence.json", `{"command": {"deny": "git push"}}`, false, `fence.json:1: command.deny: want a list of strings`},
		{"bad pattern", "fence.json", `{"command": {"deny": ["git {"]}}`, false, `fence.json:1: command.deny: "git {": unclosed "{"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.file, []byte(tc.data))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, FormatFence, f.Format)
			assert.Equal(t, tc.builtin, f.Config.Builtins)
		})
	}
}

func TestStripJSONC(t *testing.T) {
	in := "{\"a\": \"x // not a comment\", // comment\n \"b\": [1, 2,], /* c\n d */ \"c\": \"\\\"/*\"}\n"
	out := string(stripJSONC([]byte(in)))
	assert.Equal(t, len(in), len(out))
	assert.Contains(t, out, `"x // not a comment"`)
	assert.NotContains(t, out, "// comment")
	assert.NotContains(t, out, "2,]")
	assert.Contains(t, out, `"\"/*"`)
	assert.Equal(t, 3, countLines(out))
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}

func TestParseDenyWritableExec(t *testing.T) {
	f, err := Parse("p.yaml", []byte("version: 1\ndeny_writable_exec: true\n"))
	require.NoError(t, err)
	assert.True(t, f.Config.DenyWritable)
	p, err := Compile(f.Config)
	require.NoError(t, err)
	r := p.Decide(&Exec{Argv: []string{"tool"}, Resolved: "/work/tool", Writable: true})
	assert.Equal(t, Deny, r.Decision)
	assert.Equal(t, &WritableRule, r.Rule)
	r = p.Decide(&Exec{Argv: []string{"ls"}, Resolved: "/usr/bin/ls"})
	assert.Equal(t, Allow, r.Decision)

	_, err = Parse("p.yaml", []byte("version: 1\ndeny_writable_exec: maybe\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p.yaml:2")
}
