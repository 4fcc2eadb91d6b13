package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFiles(t *testing.T) {
	f, err := Parse("cordon.yaml", []byte(`version: 1
net: none
files:
  deny_read: ["~/.ssh/id_*", "!~/.ssh/id_*.pub", "**/.env*"]
  deny_write: [generated]
  allow_write: [~/.cache/mytool, /srv/data]
  read_only: [/opt/tools]
  writable: [go-cache]
  examples:
    - deny_read: ~/.ssh/id_ed25519
    - read: ~/.ssh/id_ed25519.pub
    - deny_read: a/b/.env.local
    - deny_write: .git/hooks/pre-commit
    - write: src/main.go
`))
	require.NoError(t, err)
	c := f.Config
	assert.Equal(t, "none", c.Net)
	assert.Equal(t, []FileRule{{Pattern: "~/.ssh/id_*", Source: "cordon.yaml:4"}, {Pattern: "!~/.ssh/id_*.pub", Source: "cordon.yaml:4"},
		{Pattern: "**/.env*", Source: "cordon.yaml:4"}}, c.Files.DenyRead)
	assert.Equal(t, []string{"~/.cache/mytool", "/srv/data"}, c.Files.AllowWrite)
	assert.Equal(t, []string{"/opt/tools"}, c.Files.ReadOnly)
	assert.Equal(t, []string{"go-cache"}, c.Files.Writable)
	assert.Len(t, c.Files.Examples, 5)
	p, err := Compile(c)
	require.NoError(t, err, "the examples hold (deny_write .git/hooks is built in)")
	fp := p.FilePolicy()
	assert.Equal(t, "builtin", fp.DenyRead[0].Source)
	assert.Equal(t, "generated", fp.DenyWrite[len(fp.DenyWrite)-1].Pattern)
	assert.Contains(t, ProtectedNames(fp.DenyWrite), ".claude")
	assert.Contains(t, ProtectedNames(fp.DenyWrite), "generated")
	assert.NotContains(t, ProtectedNames(fp.DenyWrite), "**/.git/hooks")

	// Without the built-in list the hook example fails.
	c.Builtins = false
	_, err = Compile(c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cordon.yaml:13: file example write .git/hooks/pre-commit: got allowed, want denied")
}

func TestParseFilesErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"unknown key", "files:\n  deny_reed: [x]\n", `cordon.yaml:2: files: unknown key "deny_reed" (want deny_read, deny_write, allow_write, read_only, writable, examples)`},
		{"preset", "files:\n  writable: [go-cahce]\n", `cordon.yaml:2: files.writable: unknown preset "go-cahce" (want one of cargo, go-cache, maven-cache, npm-cache, pip-cache, pnpm-store, yarn-cache)`},
		{"relative bind", "files:\n  allow_write: [cache]\n", `cordon.yaml:2: files.allow_write: "cache": want an absolute path or one under ~/`},
		{"dotdot", "files:\n  deny_read: [../secret]\n", `write it without . or .. components`},
		{"everything", "files:\n  deny_read: [\"~\"]\n", `covers everything`},
		{"user home", "files:\n  deny_read: [\"~bob/.ssh\"]\n", `only ~/ (the caller's home) is expanded`},
		{"bad glob", "files:\n  deny_read: [\"a[\"]\n", `is not a valid glob`},
		{"net", "net: off\n", `cordon.yaml:1: net: unknown network mode "off" (want host, none or filter)`},
		{"example key", "files:\n  examples:\n    - readd: x\n", `unknown key "readd" (want deny_read, read, deny_write, write)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("cordon.yaml", []byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestFenceFilesystemImport(t *testing.T) {
	f, err := Parse("fence.json", []byte(`{
  "filesystem": {
    "denyRead": ["~/.ssh", "./secrets"],
    "allowWrite": [".", "~/.cache/x", "rel"],
    "denyWrite": ["./.env"],
    "wslInterop": true
  },
  "command": {"deny": ["git push"]}
}`))
	require.NoError(t, err)
	assert.Equal(t, []FileRule{{Pattern: "~/.ssh", Source: "fence.json:3"}, {Pattern: "secrets", Source: "fence.json:3"}}, f.Config.Files.DenyRead)
	assert.Equal(t, []string{"~/.cache/x"}, f.Config.Files.AllowWrite)
	assert.Equal(t, []FileRule{{Pattern: ".env", Source: "fence.json:5"}}, f.Config.Files.DenyWrite)
	require.Len(t, f.Warnings, 2)
	assert.Contains(t, f.Warnings[0], `"rel" is relative`)
	assert.Contains(t, f.Warnings[1], `"filesystem.wslInterop" is ignored`)
}

func TestMatchFile(t *testing.T) {
	rules := []FileRule{{Pattern: "~/.ssh/id_*"}, {Pattern: "!~/.ssh/id_*.pub"}, {Pattern: "~/.aws"}, {Pattern: ".env*"}, {Pattern: ".git/hooks"}, {Pattern: ".git"}}
	globs := make([]string, len(rules))
	for i, r := range rules {
		globs[i] = AnchorPattern(r.Glob(), "/home/me", "/work/repo")
	}
	tests := []struct {
		path   string
		denied bool
	}{
		{"/home/me/.ssh/id_ed25519", true},
		{"/home/me/.ssh/id_ed25519.pub", false},
		{"/home/me/.ssh/known_hosts", false},
		{"/home/me/.aws", true},
		{"/home/me/.aws/credentials", true}, // below a denied directory
		{"/work/repo/.env", true},
		{"/work/repo/a/b/.env.local", true},
		{"/work/repo/a/.git/hooks", false}, // a '/' anchors at the tree's top
		{"/work/repo/.git/hooks/pre-commit", true},
		{"/work/repo/src/env", false},
		{"/work/repo/sub/.git", true},     // a new .git, or a .git file
		{"/work/repo/.git/index", false},  // the name .git does not cover an existing .git directory's content
		{"/work/repo/.git/hooks/x", true}, // its hooks are covered by their own rule
	}
	for _, tc := range tests {
		_, denied := MatchFile(rules, globs, tc.path)
		assert.Equal(t, tc.denied, denied, tc.path)
	}
	assert.Equal(t, "/home/m\\*e/x", AnchorPattern("~/x", "/home/m*e", ""), "a home with metacharacters is literal")
	assert.Equal(t, "", AnchorPattern("x", "/home/me", ""))
}

// TestNameProtectedFoldsCase: on a case-insensitive mount ".GIT" is .git,
// so the odd-case spellings of a protected name are protected too, and an
// exception-free name that only looks alike is not.
func TestNameProtectedFoldsCase(t *testing.T) {
	names := []string{".git", ".claude", "cordon.yaml", "*.pem"}
	for _, n := range []string{".git", ".GIT", ".Git", ".CLAUDE", "Cordon.YAML", "KEY.PEM"} {
		_, ok := NameProtected(names, n)
		assert.True(t, ok, n)
	}
	for _, n := range []string{".gitx", "git", "claude", "cordon.yml"} {
		_, ok := NameProtected(names, n)
		assert.False(t, ok, n)
	}
}
