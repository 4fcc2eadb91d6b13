package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cordon-sandbox/cordon/policy"
)

const denyPush = "rules:\n  - deny: git push\n"

// TestMain points XDG_STATE_HOME at a private directory: the tests' trust
// store, never the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cordon-config-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// write writes a file. A policy file it writes is trusted, as after
// "cordon policy trust": these tests are about discovery.
func write(t *testing.T, path, data string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	switch filepath.Base(path) {
	case "cordon.yaml", ".cordon.yaml", "policy.yaml":
		s, err := TrustStoreFor(Options{})
		require.NoError(t, err)
		require.NoError(t, s.Trust(path, Sum([]byte(data))))
	}
	return path
}

// tree makes home/repo/a/b with a .git directory in repo and returns
// home, repo and the deepest directory.
func tree(t *testing.T) (home, repo, deep string) {
	t.Helper()
	root := t.TempDir()
	home = filepath.Join(root, "home")
	repo = filepath.Join(home, "repo")
	deep = filepath.Join(repo, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(repo, ".git"), 0o755))
	return home, repo, deep
}

func TestLoadFlag(t *testing.T) {
	home, repo, deep := tree(t)
	write(t, filepath.Join(repo, "cordon.yaml"), "rules: []\n")
	p := write(t, filepath.Join(t.TempDir(), "mine.yaml"), denyPush)

	l, err := Load(Options{PolicyFile: p, Dir: deep, Home: home})
	require.NoError(t, err)
	assert.Equal(t, OriginFlag, l.Origin)
	assert.Equal(t, p, l.Path)
	require.Len(t, l.Config().Rules, 1)
	assert.Equal(t, p+":2", l.Config().Rules[0].Source)
	assert.Equal(t, p+" (flag)", l.String())

	_, err = Load(Options{PolicyFile: filepath.Join(home, "missing.yaml")})
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestLoadFlagFence(t *testing.T) {
	p := write(t, filepath.Join(t.TempDir(), "fence.json"),
		"{\n  // c\n  \"command\": {\"deny\": [\"git push\"]},\n  \"network\": {}\n}\n")
	l, err := Load(Options{PolicyFile: p})
	require.NoError(t, err)
	assert.Equal(t, policy.FormatFence, l.File.Format)
	require.Len(t, l.Warnings, 1)
	assert.Contains(t, l.Warnings[0], `fence key "network" is ignored`)
}

func TestLoadProject(t *testing.T) {
	tests := []struct {
		name  string
		files []string // relative to the tree root home/
		want  string   // relative to home/, "" for not found (built-in)
		warn  string
	}{
		{"in the working directory", []string{"repo/a/b/cordon.yaml"}, "repo/a/b/cordon.yaml", ""},
		{"in a parent", []string{"repo/a/cordon.yaml"}, "repo/a/cordon.yaml", ""},
		{"at the repository root", []string{"repo/cordon.yaml"}, "repo/cordon.yaml", ""},
		{"hidden name", []string{"repo/.cordon.yaml"}, "repo/.cordon.yaml", ""},
		{"nearest wins", []string{"repo/cordon.yaml", "repo/a/.cordon.yaml"}, "repo/a/.cordon.yaml", ""},
		{"both names", []string{"repo/cordon.yaml", "repo/.cordon.yaml"}, "repo/cordon.yaml", ".cordon.yaml ignored: "},
		{"not above the repository", []string{"cordon.yaml"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home, _, deep := tree(t)
			for _, f := range tc.files {
				write(t, filepath.Join(home, f), denyPush)
			}
			l, err := Load(Options{Dir: deep, Home: home, ConfigHome: filepath.Join(home, "xdg")})
			require.NoError(t, err)
			if tc.want == "" {
				assert.Equal(t, OriginBuiltin, l.Origin)
				assert.Equal(t, "built-in default", l.String())
				assert.Contains(t, l.Searched, filepath.Join(home, "repo", "cordon.yaml"))
				assert.NotContains(t, l.Searched, filepath.Join(home, "cordon.yaml"))
				return
			}
			assert.Equal(t, OriginProject, l.Origin)
			assert.Equal(t, filepath.Join(home, tc.want), l.Path)
			assert.Len(t, l.Config().Rules, 1)
			if tc.warn != "" {
				require.Len(t, l.Warnings, 1)
				assert.Contains(t, l.Warnings[0], tc.warn)
			} else {
				assert.Empty(t, l.Warnings)
			}
		})
	}
}

func TestLoadWithoutRepository(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	deep := filepath.Join(home, "proj", "sub")
	require.NoError(t, os.MkdirAll(deep, 0o755))

	t.Run("stops at home", func(t *testing.T) {
		write(t, filepath.Join(root, "cordon.yaml"), denyPush)
		l, err := Load(Options{Dir: deep, Home: home, ConfigHome: filepath.Join(home, "xdg")})
		require.NoError(t, err)
		assert.Equal(t, OriginBuiltin, l.Origin)
		assert.Contains(t, l.Searched, filepath.Join(home, "cordon.yaml"))
		assert.NotContains(t, l.Searched, filepath.Join(root, "cordon.yaml"))
	})
	t.Run("home itself counts", func(t *testing.T) {
		write(t, filepath.Join(home, ".cordon.yaml"), denyPush)
		defer os.Remove(filepath.Join(home, ".cordon.yaml"))
		l, err := Load(Options{Dir: deep, Home: home})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(home, ".cordon.yaml"), l.Path)
	})
	t.Run("outside home goes up", func(t *testing.T) {
		write(t, filepath.Join(root, "cordon.yaml"), denyPush)
		other := filepath.Join(root, "srv", "x")
		require.NoError(t, os.MkdirAll(other, 0o755))
		l, err := Load(Options{Dir: other, Home: home, ConfigHome: filepath.Join(home, "xdg")})
		require.NoError(t, err)
		assert.Equal(t, OriginProject, l.Origin)
		assert.Equal(t, filepath.Join(root, "cordon.yaml"), l.Path)
	})
}

func TestLoadUser(t *testing.T) {
	home, _, deep := tree(t)
	xdg := filepath.Join(home, "xdg")
	p := write(t, filepath.Join(xdg, "cordon", "policy.yaml"), denyPush)

	l, err := Load(Options{Dir: deep, Home: home, ConfigHome: xdg})
	require.NoError(t, err)
	assert.Equal(t, OriginUser, l.Origin)
	assert.Equal(t, p, l.Path)
	assert.Equal(t, p, l.Searched[len(l.Searched)-1])

	t.Run("default ~/.config", func(t *testing.T) {
		p := write(t, filepath.Join(home, ".config", "cordon", "policy.yaml"), denyPush)
		t.Setenv("XDG_CONFIG_HOME", "")
		l, err := Load(Options{Dir: deep, Home: home})
		require.NoError(t, err)
		assert.Equal(t, p, l.Path)
	})
	t.Run("relative XDG_CONFIG_HOME ignored", func(t *testing.T) {
		l, err := Load(Options{Dir: deep, Home: home, ConfigHome: "rel"})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(home, ".config", "cordon", "policy.yaml"), l.Path)
	})
	t.Run("project wins", func(t *testing.T) {
		write(t, filepath.Join(deep, "cordon.yaml"), denyPush)
		defer os.Remove(filepath.Join(deep, "cordon.yaml"))
		l, err := Load(Options{Dir: deep, Home: home, ConfigHome: xdg})
		require.NoError(t, err)
		assert.Equal(t, OriginProject, l.Origin)
	})
}

func TestLoadBuiltin(t *testing.T) {
	home, _, deep := tree(t)
	l, err := Load(Options{Dir: deep, Home: home, ConfigHome: filepath.Join(home, "none")})
	require.NoError(t, err)
	assert.Equal(t, OriginBuiltin, l.Origin)
	assert.Empty(t, l.Path)
	assert.Equal(t, policy.Config{Default: policy.Allow, Builtins: true}, l.Config())
	_, err = policy.Compile(l.Config())
	require.NoError(t, err)
}

func TestLoadErrors(t *testing.T) {
	home, repo, deep := tree(t)
	p := write(t, filepath.Join(repo, "cordon.yaml"), "rules:\n  - deny: git push\n  - denyy: x\n")
	_, err := Load(Options{Dir: deep, Home: home})
	require.Error(t, err)
	assert.Contains(t, err.Error(), p+`:3: rule 2: unknown key "denyy"`)
}

func TestLoadSkipsUnsafeFiles(t *testing.T) {
	home, repo, deep := tree(t)
	p := write(t, filepath.Join(repo, "cordon.yaml"), "default: allow\ndefaults: false\n")
	require.NoError(t, os.Chmod(p, 0o666))
	l, err := Load(Options{Dir: deep, Home: home, ConfigHome: filepath.Join(home, "none")})
	require.NoError(t, err)
	assert.Equal(t, OriginBuiltin, l.Origin)
	require.Len(t, l.Warnings, 1)
	assert.Contains(t, l.Warnings[0], p+" skipped: writable by other users")

	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Mkdir(p, 0o755))
	l, err = Load(Options{Dir: deep, Home: home, ConfigHome: filepath.Join(home, "none")})
	require.NoError(t, err)
	assert.Contains(t, l.Warnings[0], "not a regular file")
}
