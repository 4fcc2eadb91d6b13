//go:build linux

package bwrap

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFindSkipsUntrusted: a bwrap that the user (or, run by root, a root
// sandbox) could have written is skipped for the next one on PATH, and
// alone it is refused with the reason; relative PATH entries are never
// searched. The trusted one is returned as its real path.
func TestFindSkipsUntrusted(t *testing.T) {
	sys, err := filepath.EvalSymlinks("/usr/bin/bwrap")
	if err != nil {
		testcap.SkipOrFail(t, "no /usr/bin/bwrap to find: %v", err)
	}
	planted := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(planted, "bwrap"), []byte("#!/bin/sh\n"), 0o755))

	t.Setenv("PATH", planted+":/usr/bin")
	got, err := Find()
	require.NoError(t, err)
	assert.Equal(t, sys, got)

	t.Setenv("PATH", planted)
	_, err = Find()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no trusted bubblewrap on PATH: "+filepath.Join(planted, "bwrap"))

	t.Chdir(planted)
	t.Setenv("PATH", ".:bin")
	_, err = Find()
	assert.ErrorIs(t, err, ErrNotFound)

	// A symlink named bwrap to a root-owned program of another name (the
	// red team's .venv/bin/bwrap -> /usr/bin/mvn, which read the working
	// directory's .mvn/jvm.config): never run; one to bubblewrap itself
	// is bubblewrap.
	linked := t.TempDir()
	require.NoError(t, os.Symlink("/bin/false", filepath.Join(linked, "bwrap")))
	t.Setenv("PATH", linked)
	_, err = Find()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "which is not bubblewrap")
	require.NoError(t, os.Remove(filepath.Join(linked, "bwrap")))
	require.NoError(t, os.Symlink("/usr/bin/bwrap", filepath.Join(linked, "bwrap")))
	got, err = Find()
	require.NoError(t, err)
	assert.Equal(t, sys, got, "a link to bubblewrap runs bubblewrap itself")

	// A world-writable directory (not sticky) above a root-owned file.
	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o755))
	require.NoError(t, os.Chmod(open, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(open, "bwrap"), []byte("#!/bin/sh\n"), 0o755))
	_, err = trusted(filepath.Join(open, "bwrap"))
	require.Error(t, err)
}
