package proc

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestOpenat2RetriesConcurrentRenames: a lookup in a root with ".." that
// runs while anything on the system is renamed gets EAGAIN from the kernel
// (it cannot prove the ".." stayed inside); Openat2 retries it. The same
// lookups through unix.Openat2 show the EAGAINs happen here.
func TestOpenat2RetriesConcurrentRenames(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "f"), nil, 0o644))
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(root)
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT}

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		x, y := filepath.Join(dir, "x"), filepath.Join(dir, "y")
		require.NoError(t, os.WriteFile(x, nil, 0o644))
		for !stop.Load() {
			_ = os.Rename(x, y)
			_ = os.Rename(y, x)
		}
	}()
	raw, retried := 0, 0
	for range 20000 {
		if fd, err := unix.Openat2(root, "a/b/../f", &how); err == nil {
			unix.Close(fd)
		} else if err == unix.EAGAIN {
			raw++
		}
		fd, err := Openat2(root, "a/b/../f", &how)
		if err != nil {
			retried++
			continue
		}
		unix.Close(fd)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("EAGAIN from unix.Openat2: %d of 20000", raw)
	require.Positive(t, raw, "no lookup met a concurrent rename: the test shows nothing")
	assert.Zero(t, retried, "Openat2 failed %d lookups", retried)
}
