package runner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func builtinFiles() policy.FilePolicy {
	r, w := policy.BuiltinFiles()
	return policy.FilePolicy{DenyRead: r, DenyWrite: w}
}

func mkfile(t *testing.T, p string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
}

// TestPlanFilesGitDirBind: a writable bind of a repository's .git directory
// itself (as a linked worktree's common directory may be bound) still has
// its hooks (made when missing) and config protected.
func TestPlanFilesGitDirBind(t *testing.T) {
	repo := t.TempDir()
	mkfile(t, filepath.Join(repo, ".git/config"))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git/objects/ab"), 0o755))
	work := t.TempDir()
	fl, err := planFiles(builtinFiles(), bwrap.Spec{Dir: work, RW: []string{filepath.Join(repo, ".git")}}, t.TempDir(), true)
	require.NoError(t, err)
	defer fl.cleanup()
	assert.ElementsMatch(t, []string{filepath.Join(repo, ".git/config"), filepath.Join(repo, ".git/hooks")}, fl.protect)
	assert.DirExists(t, filepath.Join(repo, ".git/hooks"))
}

// TestPlanFilesMatches: home rules by lstat, relative rules at any depth,
// exceptions, a symlink standing for its target, nothing in /tmp outside
// the binds, and the walk bound.
func TestPlanFilesMatches(t *testing.T) {
	home, err := os.MkdirTemp("/var/tmp", "cordon-plan-")
	require.NoError(t, err)
	defer os.RemoveAll(home)
	mkfile(t, filepath.Join(home, ".ssh/id_rsa"))
	mkfile(t, filepath.Join(home, ".ssh/id_rsa.pub"))
	mkfile(t, filepath.Join(home, "real-secret"))
	work := filepath.Join(home, "work")
	mkfile(t, filepath.Join(work, "a/b/.env"))
	mkfile(t, filepath.Join(work, "a/.claude/settings.json"))
	require.NoError(t, os.Symlink(filepath.Join(home, "real-secret"), filepath.Join(work, ".env.link")))
	fp := builtinFiles()
	fp.DenyRead = append(fp.DenyRead, policy.FileRule{Pattern: ".env*", Source: "--deny-read"})
	fl, err := planFiles(fp, bwrap.Spec{Dir: work}, home, true)
	require.NoError(t, err)
	defer fl.cleanup()
	var hidden []string
	for _, u := range fl.unreadable {
		hidden = append(hidden, u.Path)
	}
	assert.ElementsMatch(t, []string{filepath.Join(home, ".ssh/id_rsa"), filepath.Join(work, "a/b/.env"), filepath.Join(home, "real-secret")}, hidden)
	assert.Equal(t, []string{filepath.Join(work, "a/.claude")}, fl.protect)
	assert.FileExists(t, filepath.Join(fl.placeholder, "denied"))
	fi, err := os.Stat(filepath.Join(fl.placeholder, "denied"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0), fi.Mode().Perm())

	// A bind a rule covers is a conflict; a rule inside a bind is not.
	_, err = planFiles(fp, bwrap.Spec{Dir: work, RO: []string{filepath.Join(home, ".ssh/id_rsa")}}, home, true)
	var se *SetupError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Contains(t, err.Error(), `deny_read "~/.ssh/id_*" (builtin) covers `+filepath.Join(home, ".ssh/id_rsa"))
	fl2, err := planFiles(fp, bwrap.Spec{Dir: work, RW: []string{filepath.Join(home, ".ssh")}}, home, true)
	require.NoError(t, err)
	fl2.cleanup()
	fp.DenyWrite = append(fp.DenyWrite, policy.FileRule{Pattern: filepath.Join(home, ".ssh"), Source: "--deny-write"})
	_, err = planFiles(fp, bwrap.Spec{Dir: work, RW: []string{filepath.Join(home, ".ssh")}}, home, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `deny_write "`+filepath.Join(home, ".ssh")+`" (--deny-write) covers`)
}

// TestPlanFilesSymlinkedDirectory: a ~/.ssh that is a symlink to the real
// directory (dotfile managers) still has its keys found and hidden.
func TestPlanFilesSymlinkedDirectory(t *testing.T) {
	home, err := os.MkdirTemp("/var/tmp", "cordon-plan-")
	require.NoError(t, err)
	defer os.RemoveAll(home)
	mkfile(t, filepath.Join(home, "dotfiles/ssh/id_ed25519"))
	require.NoError(t, os.Symlink(filepath.Join(home, "dotfiles/ssh"), filepath.Join(home, ".ssh")))
	fl, err := planFiles(builtinFiles(), bwrap.Spec{}, home, true)
	require.NoError(t, err)
	defer fl.cleanup()
	require.Len(t, fl.unreadable, 1)
	assert.Equal(t, filepath.Join(home, "dotfiles/ssh/id_ed25519"), fl.unreadable[0].Path)
}

// TestPlanFilesUnknownHome: a ~ rule with no home is an error, never a
// rule silently dropped.
func TestPlanFilesUnknownHome(t *testing.T) {
	_, err := planFiles(builtinFiles(), bwrap.Spec{Dir: t.TempDir()}, "", true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the home directory is unknown")
}

// TestPlanFilesGitDataBind: a git directory's data bound as a writable tree
// of its own (a linked worktree's common objects, refs and logs) is not
// walked for protected names, exactly as when the walk reaches it from the
// repository; a deny_read rule still walks it (a secret may be moved
// anywhere), and a directory named objects outside a git directory is
// walked as any other.
func TestPlanFilesGitDataBind(t *testing.T) {
	repo := t.TempDir()
	mkfile(t, filepath.Join(repo, ".git/HEAD"))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git/refs"), 0o755))
	mkfile(t, filepath.Join(repo, ".git/objects/ab/.claude/x"))
	mkfile(t, filepath.Join(repo, ".git/objects/ab/secret.key"))
	objects := filepath.Join(repo, ".git/objects")
	fake := filepath.Join(t.TempDir(), "objects")
	mkfile(t, filepath.Join(fake, ".claude/x"))

	fl, err := planFiles(builtinFiles(), bwrap.Spec{Dir: t.TempDir(), RW: []string{objects, fake}}, t.TempDir(), true)
	require.NoError(t, err)
	defer fl.cleanup()
	assert.Equal(t, []string{filepath.Join(fake, ".claude")}, fl.protect)

	// Reached from the repository: the same.
	fl2, err := planFiles(builtinFiles(), bwrap.Spec{Dir: repo}, t.TempDir(), true)
	require.NoError(t, err)
	defer fl2.cleanup()
	assert.NotContains(t, fl2.protect, filepath.Join(objects, "ab/.claude"))

	fp := builtinFiles()
	fp.DenyRead = append(fp.DenyRead, policy.FileRule{Pattern: "*.key", Source: "--deny-read"})
	fl3, err := planFiles(fp, bwrap.Spec{Dir: t.TempDir(), RW: []string{objects}}, t.TempDir(), true)
	require.NoError(t, err)
	defer fl3.cleanup()
	var hidden []string
	for _, u := range fl3.unreadable {
		hidden = append(hidden, u.Path)
	}
	assert.Equal(t, []string{filepath.Join(objects, "ab/secret.key")}, hidden)
}

// A bare name without glob metacharacters is compared as a string during
// the walk; it must match exactly what path.Match matched: the very name,
// a name with '{' (not a metacharacter for a bare name) included, and
// neither a longer nor a differently cased one. An escaped metacharacter
// goes through path.Match as before.
func TestPlanFilesLiteralNames(t *testing.T) {
	home := t.TempDir()
	work := filepath.Join(home, "work")
	mkfile(t, filepath.Join(work, "a/secret.txt"))
	mkfile(t, filepath.Join(work, "a/secret.txt.bak"))
	mkfile(t, filepath.Join(work, "b/Secret.txt"))
	mkfile(t, filepath.Join(work, "c/we{ird"))
	mkfile(t, filepath.Join(work, "d/star*"))
	mkfile(t, filepath.Join(work, "d/starx"))
	fp := policy.FilePolicy{DenyRead: []policy.FileRule{
		{Pattern: "secret.txt", Source: "--deny-read"},
		{Pattern: "we{ird", Source: "--deny-read"},
		{Pattern: `star\*`, Source: "--deny-read"},
	}}
	fl, err := planFiles(fp, bwrap.Spec{Dir: work}, home, true)
	require.NoError(t, err)
	defer fl.cleanup()
	var hidden []string
	for _, u := range fl.unreadable {
		hidden = append(hidden, u.Path)
	}
	assert.ElementsMatch(t, []string{
		filepath.Join(work, "a/secret.txt"), filepath.Join(work, "c/we{ird"), filepath.Join(work, "d/star*"),
	}, hidden)
}
