package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cordon-sandbox/cordon/internal/testcap"
)

// A remembered bubblewrap probe that no longer holds (here: a bwrap that
// passes the probe and then builds no sandbox) fails the run, never runs
// the command in a weaker tier, and is forgotten so the next run probes
// again.
func TestAutoForgetsRememberedProbeWhenBwrapFails(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "bwrap"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	entry := filepath.Join(cache, "cordon", "bwrap-probe")

	for i := range 2 {
		o := runCordon(t, IsolationAuto, nil, "sh", "-c", "echo ran")
		require.Error(t, o.err, "run %d: a sandbox bubblewrap did not build is a failure", i)
		t.Logf("run %d: %v", i, o.err)
		assert.Empty(t, o.stdout, "run %d: the command never ran", i)
		assert.NoFileExists(t, entry, "run %d: the remembered probe is forgotten", i)
	}
}
