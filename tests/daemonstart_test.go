package tests

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Found by a red team (the library's default, latent): a caller of the Go
// library's daemon.Start that names no binary does not get the first "cordon" on
// PATH run on the host: a sandboxed workload may have put one there (a
// virtualenv's bin). Before, the planted program ran.
func TestStartNeverLooksUpCordonOnPath(t *testing.T) {
	bin, xdg := t.TempDir(), t.TempDir()
	require.NoError(t, os.Chmod(xdg, 0o700))
	marker := filepath.Join(t.TempDir(), "ran")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "cordon"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	t.Setenv("CORDON_HOST", "")
	p, err := daemon.Locate()
	require.NoError(t, err)
	for _, exe := range []string{"", "cordon", "bin/cordon"} {
		_, err := daemon.Start(context.Background(), p, daemon.StartOptions{Exe: exe, Timeout: 2 * time.Second})
		require.Error(t, err, exe)
		assert.Contains(t, err.Error(), "StartOptions.Exe must be the absolute path", exe)
	}
	assert.NoFileExists(t, marker, "a cordon found on PATH ran")
}
