package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigValue(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(p, []byte(`[core]
	repositoryformatversion = 0
	worktree = ../../../sub
[Extensions] worktreeConfig = true
[remote "origin"]
	worktree = /not/core
# worktree = /comment
`), 0o644))
	v, ok := configValue(p, "core", "worktree")
	assert.True(t, ok)
	assert.Equal(t, "../../../sub", v)
	v, ok = configValue(p, "extensions", "worktreeconfig")
	assert.True(t, ok)
	assert.Equal(t, "true", v)
	_, ok = configValue(p, "core", "bare")
	assert.False(t, ok)
	_, ok = configValue(filepath.Join(t.TempDir(), "none"), "core", "worktree")
	assert.False(t, ok)
}

func TestReadGitFile(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.Mkdir(real, 0o755))
	f := filepath.Join(dir, "sub", ".git")
	require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))

	require.NoError(t, os.WriteFile(f, []byte("gitdir: ../real\n"), 0o644))
	got, err := readGitFile(f)
	require.NoError(t, err)
	assert.Equal(t, mustReal(real), got, "relative to the file's directory")

	for _, bad := range []string{"", "gitdir:\n", "notgit: x\n", "gitdir: ../missing\n"} {
		require.NoError(t, os.WriteFile(f, []byte(bad), 0o644))
		_, err := readGitFile(f)
		assert.Error(t, err, "%q", bad)
	}
}

// TestGitBindsForNothingOutsideARepository: no .git, no binds.
func TestGitBindsForNothingOutsideARepository(t *testing.T) {
	dir := t.TempDir()
	v := gitBindsFor(dir, nil)
	assert.Empty(t, v.rw)
	assert.Empty(t, v.private)
	assert.Empty(t, gitBindsFor("", nil).rw)
}
