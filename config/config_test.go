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
	// fence's network section is enforced now: empty, it allows nothing.
	assert.Empty(t, l.Warnings)
	require.NotNil(t, l.Config().Network)
	assert.Empty(t, l.Config().Network.Rules)
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
			opts := Options{Dir: deep, Home: home, ConfigHome: filepath.Join(home, "xdg")}
			l, err := Load(opts)
			if tc.want == "" && len(tc.files) > 0 {
				// A trusted policy above the repository root does not apply
				// in it, but the root must be accepted first: a workload
				// can make any directory it writes a repository root.
				var ue *UntrustedError
				require.ErrorAs(t, err, &ue)
				assert.Equal(t, filepath.Join(home, "repo", ".git"), ue.Path)
				assert.Equal(t, filepath.Join(home, tc.files[0]), ue.Hides)
				store, serr := TrustStoreFor(opts)
				require.NoError(t, serr)
				require.NoError(t, store.Trust(ue.Path, ue.Sum))
				l, err = Load(opts)
			}
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

// TestRepositoryRootHidingATrustedPolicy: a .git made where a trusted policy
// applied (by a workload: any directory it writes) must not switch that
// policy off silently; one above the root that was never trusted is not
// in play.
func TestRepositoryRootHidingATrustedPolicy(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	proj := filepath.Join(home, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "sub"), 0o755))
	opts := Options{Dir: proj, Home: home, ConfigHome: filepath.Join(home, "xdg"), StateHome: filepath.Join(root, "state")}
	p := filepath.Join(home, "cordon.yaml")
	require.NoError(t, os.WriteFile(p, []byte(denyPush), 0o644))
	require.NoError(t, opts.trustStore().Trust(p, Sum([]byte(denyPush))))

	l, err := Load(opts)
	require.NoError(t, err)
	assert.Equal(t, p, l.Path, "no repository: the policy in $HOME applies")

	for _, dir := range []string{proj, filepath.Join(proj, "sub")} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
		o := opts
		o.Dir = dir
		_, err = Load(o)
		var ue *UntrustedError
		require.ErrorAs(t, err, &ue, "a new repository root in %s", dir)
		assert.Equal(t, p, ue.Hides)
		assert.Contains(t, err.Error(), "hides "+p)
		assert.Contains(t, err.Error(), `run "cordon policy trust" in `+dir)

		o.AllowUntrusted = true
		l, err = Load(o)
		require.NoError(t, err)
		assert.Equal(t, dir, l.Root)
		assert.Equal(t, p, l.Hidden)

		require.NoError(t, opts.trustStore().Trust(ue.Path, ue.Sum))
		o.AllowUntrusted = false
		l, err = Load(o)
		require.NoError(t, err, "accepted")
		assert.Equal(t, OriginBuiltin, l.Origin)
	}

	// Never trusted above the root: nothing is hidden.
	other := filepath.Join(root, "other")
	require.NoError(t, os.MkdirAll(filepath.Join(other, "repo", ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "cordon.yaml"), []byte(denyPush), 0o644))
	o := opts
	o.Dir, o.Home = filepath.Join(other, "repo"), root
	l, err = Load(o)
	require.NoError(t, err)
	assert.Equal(t, OriginBuiltin, l.Origin)
}
