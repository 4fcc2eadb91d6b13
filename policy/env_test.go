package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", true},
		{"AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY2", false},
		{"AWS_*", "AWS_PROFILE", true},
		{"AWS_*", "XAWS_PROFILE", false},
		{"*_TOKEN", "GITHUB_TOKEN", true},
		{"*_TOKEN", "GITHUB_TOKENS", false},
		{"AZURE_*SECRET*", "AZURE_CLIENT_SECRET", true},
		{"AZURE_*SECRET*", "AZURE_SECRET", true},
		{"AZURE_*SECRET*", "AZURE_CLIENT_ID", false},
		{"*", "ANYTHING", true},
		{"A*B*A", "ABA", true},
		{"A*B*A", "AB", false}, // the suffix may not reuse the bytes before it
		{"A*A", "A", false},
		{"A*A", "AA", true},
		{"a_token", "A_TOKEN", false}, // names are case-sensitive
		{"X[1]", "X[1]", true},        // brackets are literal
		{"*/x", "a/b/x", true},        // '*' crosses '/'
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, envMatch(tc.pattern, tc.name), "%q vs %q", tc.pattern, tc.name)
	}
}

func TestScrubEnvDefaults(t *testing.T) {
	p, err := Compile(Config{Default: Allow, Builtins: true})
	require.NoError(t, err)
	env := []string{"PATH=/bin", "GITHUB_TOKEN=ghp_x", "AWS_SECRET_ACCESS_KEY=s", "ANTHROPIC_API_KEY=k",
		"OPENAI_API_KEY=o", "CLAUDE_CODE_OAUTH_TOKEN=c", "AZURE_CLIENT_SECRET=a", "SSH_AUTH_SOCK=/run/s",
		"GITHUB_TOKEN=again", "TF_TOKEN_app_terraform_io=t", "HOME=/h"}
	kept, removed := p.ScrubEnv(env)
	assert.Equal(t, []string{"PATH=/bin", "ANTHROPIC_API_KEY=k", "OPENAI_API_KEY=o", "CLAUDE_CODE_OAUTH_TOKEN=c", "HOME=/h"}, kept)
	assert.Equal(t, []string{"AWS_SECRET_ACCESS_KEY", "AZURE_CLIENT_SECRET", "GITHUB_TOKEN", "SSH_AUTH_SOCK", "TF_TOKEN_app_terraform_io"}, removed)

	p, err = Compile(Config{Default: Allow})
	require.NoError(t, err)
	kept, removed = p.ScrubEnv(env)
	assert.Equal(t, env, kept, "without the built-in list nothing is removed")
	assert.Empty(t, removed)
}

func TestScrubEnvDenyAndPass(t *testing.T) {
	p, err := Compile(Config{Default: Allow, Builtins: true, Env: EnvConfig{
		Deny: []EnvRule{{Pattern: "*_TOKEN", Source: "--env-deny"}},
		Pass: []EnvRule{{Pattern: "GITHUB_TOKEN", Source: "--env-pass"}, {Pattern: "CLAUDE_*", Source: "x"}},
	}})
	require.NoError(t, err)
	kept, removed := p.ScrubEnv([]string{"GITHUB_TOKEN=g", "MY_TOKEN=m", "CLAUDE_CODE_OAUTH_TOKEN=c", "NPM_TOKEN=n", "TOKEN=t"})
	assert.Equal(t, []string{"GITHUB_TOKEN=g", "CLAUDE_CODE_OAUTH_TOKEN=c", "TOKEN=t"}, kept)
	assert.Equal(t, []string{"MY_TOKEN", "NPM_TOKEN"}, removed)
	assert.Equal(t, "builtin", p.Env().Deny[0].Source)
	assert.Equal(t, "--env-deny", p.Env().Deny[len(p.Env().Deny)-1].Source)
}

func TestCompileRejectsBadEnvPattern(t *testing.T) {
	for _, bad := range []string{"", "A=B", "A\x00"} {
		_, err := Compile(Config{Env: EnvConfig{Deny: []EnvRule{{Pattern: bad, Source: "--env-deny"}}}})
		assert.ErrorContains(t, err, "--env-deny", "%q", bad)
		_, err = Compile(Config{Env: EnvConfig{Pass: []EnvRule{{Pattern: bad, Source: "--env-pass"}}}})
		assert.ErrorContains(t, err, "--env-pass", "%q", bad)
	}
}

func TestParseEnvSection(t *testing.T) {
	f, err := Parse("cordon.yaml", []byte("env:\n  deny: [\"*_TOKEN\", AWS_*]\n  pass: ANTHROPIC_API_KEY\n"))
	require.NoError(t, err)
	assert.Equal(t, EnvConfig{
		Deny: []EnvRule{{Pattern: "*_TOKEN", Source: "cordon.yaml:2"}, {Pattern: "AWS_*", Source: "cordon.yaml:2"}},
		Pass: []EnvRule{{Pattern: "ANTHROPIC_API_KEY", Source: "cordon.yaml:3"}},
	}, f.Config.Env)

	for _, tc := range []struct{ name, doc, want string }{
		{"unknown key", "env:\n  keep: [A]\n", `cordon.yaml:2: env: unknown key "keep"`},
		{"not a mapping", "env: [A]\n", "cordon.yaml:1: env: want a mapping"},
		{"bad name", "env:\n  deny: [\"A=B\"]\n", "cordon.yaml:2: env deny:"},
		{"not a string", "env:\n  pass: [[A]]\n", "cordon.yaml:2: env pass: want a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("cordon.yaml", []byte(tc.doc))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
