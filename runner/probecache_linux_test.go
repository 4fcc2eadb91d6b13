package runner

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cordon-sandbox/cordon/internal/testcap"
)

// A remembered bubblewrap probe that no longer holds (here: bubblewrap
// passes the probe and then builds no sandbox: a bind it cannot make; a
// planted bwrap that passes the probe is no longer run at all, see
// bwrap.Find) fails the run, never runs the command in a weaker tier, and
// is forgotten so the next run probes again.
func TestAutoForgetsRememberedProbeWhenBwrapFails(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	entry := filepath.Join(cache, "cordon", "bwrap-probe")
	missing := func(o *Options) { o.RW = []string{"/nonexistent/cordon-forget-test"} }

	for i := range 2 {
		o := runCordon(t, IsolationAuto, missing, "sh", "-c", "echo ran")
		require.Error(t, o.err, "run %d: a sandbox bubblewrap did not build is a failure", i)
		t.Logf("run %d: %v", i, o.err)
		assert.Empty(t, o.stdout, "run %d: the command never ran", i)
		assert.NoFileExists(t, entry, "run %d: the remembered probe is forgotten", i)
	}
}
