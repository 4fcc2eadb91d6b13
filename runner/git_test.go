package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
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
	v := gitBindsFor(dir, nil, "", false)
	assert.Empty(t, v.rw)
	assert.Empty(t, v.private)
	assert.Empty(t, gitBindsFor("", nil, "", false).rw)
}

// TestGitBindsForLinkedWorktree: the view of a real linked worktree, and
// of the same worktree with its .git file pointed elsewhere.
func TestGitBindsForLinkedWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testcap.SkipOrFail(t, "git not installed")
	}
	root := mustReal(t.TempDir())
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+root, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	main, wt := filepath.Join(root, "main"), filepath.Join(root, "wt")
	require.NoError(t, os.Mkdir(main, 0o755))
	git(main, "init", "-q")
	git(main, "commit", "-q", "--allow-empty", "-m", "init")
	git(main, "worktree", "add", "-q", wt)
	common := filepath.Join(main, ".git")
	gitdir := filepath.Join(common, "worktrees", "wt")

	v := gitBindsFor(wt, nil, "", false)
	assert.Equal(t, []string{common}, v.private)
	assert.ElementsMatch(t, []string{gitdir, filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(common, "logs")}, v.rw)
	// The worktree's own modules/ (its submodules' git directories) is
	// read-only, made when missing: nothing can be planted there.
	assert.Equal(t, []string{filepath.Join(gitdir, "modules"), filepath.Join(common, "packed-refs")}, v.roMust)
	assert.Contains(t, v.ro, filepath.Join(common, "config"))
	assert.Contains(t, v.ro, filepath.Join(common, "hooks"))
	assert.NotContains(t, v.ro, filepath.Join(common, "objects"))
	assert.Subset(t, v.protect, []string{filepath.Join(wt, ".git"), filepath.Join(gitdir, "commondir"), filepath.Join(gitdir, "gitdir")})
	fi, err := os.Stat(filepath.Join(common, "packed-refs"))
	require.NoError(t, err, "packed-refs is made to exist")
	assert.Zero(t, fi.Size())

	// The main worktree: its .git is in the writable tree; the linked
	// worktree's link files in it are protected.
	v = gitBindsFor(main, nil, "", false)
	assert.Empty(t, v.rw)
	assert.Empty(t, v.private)
	assert.Subset(t, v.protect, []string{filepath.Join(common, "config"), filepath.Join(common, "hooks"),
		filepath.Join(gitdir, "commondir"), filepath.Join(gitdir, "gitdir")})

	// A .git file naming the common dir itself, or this worktree's gitdir
	// from another directory: nothing bound.
	other := filepath.Join(root, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	for _, target := range []string{common, gitdir} {
		require.NoError(t, os.WriteFile(filepath.Join(other, ".git"), []byte("gitdir: "+target+"\n"), 0o644))
		v = gitBindsFor(other, nil, "", false)
		assert.Empty(t, v.rw, "forged link to %s", target)
		assert.Empty(t, v.private, "forged link to %s", target)
		assert.Contains(t, v.why, "nothing bound")
	}
}
