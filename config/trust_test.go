package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadRefusesUntrusted(t *testing.T) {
	home, repo, deep := tree(t)
	state := t.TempDir()
	opts := Options{Dir: deep, Home: home, StateHome: state}
	p := filepath.Join(repo, "cordon.yaml")
	require.NoError(t, os.WriteFile(p, []byte(denyPush), 0o644))

	l, err := Load(opts)
	var ue *UntrustedError
	require.ErrorAs(t, err, &ue, "a new file is refused")
	assert.Equal(t, p, ue.Path)
	assert.Contains(t, err.Error(), "cordon policy trust "+p)
	assert.Nil(t, l.File, "nothing of an untrusted file is parsed")

	shown := opts
	shown.AllowUntrusted = true
	l, err = Load(shown)
	require.NoError(t, err)
	assert.False(t, l.Trusted)
	assert.Len(t, l.Config().Rules, 1)

	store := &TrustStore{Path: filepath.Join(state, "cordon", "trusted.json")}
	require.NoError(t, store.Trust(p, Sum([]byte(denyPush))))
	l, err = Load(opts)
	require.NoError(t, err, "trusted")
	assert.True(t, l.Trusted)
	fi, err := os.Stat(store.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(store.Dir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	require.NoError(t, os.WriteFile(p, []byte("rules: []\n"), 0o644))
	_, err = Load(opts)
	require.ErrorAs(t, err, &ue, "a changed file is refused again")

	_, err = Load(Options{Dir: deep, Home: home, StateHome: state, PolicyFile: p})
	require.NoError(t, err, "--policy is explicit trust")
}

func TestCandidates(t *testing.T) {
	home, repo, deep := tree(t)
	cands, err := Candidates(Options{Dir: deep, Home: home, ConfigHome: filepath.Join(home, ".config")})
	require.NoError(t, err)
	var paths []string
	for _, c := range cands {
		paths = append(paths, c.Path)
	}
	assert.Equal(t, []string{
		filepath.Join(deep, "cordon.yaml"), filepath.Join(deep, ".cordon.yaml"),
		filepath.Join(repo, "a", "cordon.yaml"), filepath.Join(repo, "a", ".cordon.yaml"),
		filepath.Join(repo, "cordon.yaml"), filepath.Join(repo, ".cordon.yaml"),
		filepath.Join(home, ".config", "cordon", "policy.yaml"),
	}, paths)
}
