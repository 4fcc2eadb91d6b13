package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The command's first exec is decided with the program lookups made while
// the sandbox started (supervisor.Prewarm, from the init's hello): they
// must be the sandbox's answers. A copy of /bin/true named like a denied
// program on the sandbox's PATH makes /bin/true that program; the same copy
// in a directory only the host has (the sandbox's /tmp is its own tmpfs)
// must not: a lookup made in the host's root would deny it.
func TestStartupPrewarmedLookups(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	copyFile(t, "/bin/true", filepath.Join(dir, "bin", "mytool"), 0o755)
	path := "PATH=" + filepath.Join(dir, "bin") + ":" + os.Getenv("PATH")

	r := runCordon(t, runOpts{dir: dir, env: []string{path}}, "--deny", "mytool", "--", "/bin/true")
	assert.Equal(t, 126, r.code, r.stderr)
	assert.Contains(t, r.stderr, `cordon: denied: /bin/true (rule: deny "mytool")`)

	// Only the host sees this directory: the first exec is allowed.
	hostOnly := t.TempDir()
	copyFile(t, "/bin/true", filepath.Join(hostOnly, "mytool"), 0o755)
	work := t.TempDir()
	r = runCordon(t, runOpts{dir: work, env: []string{"PATH=" + hostOnly + ":" + os.Getenv("PATH")}},
		"--isolation", "bwrap", "--deny", "mytool", "--", "/bin/true")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "denied")
}
