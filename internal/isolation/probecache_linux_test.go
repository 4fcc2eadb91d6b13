package isolation

import (
	"context"
	"github.com/cordon-sandbox/cordon/bwrap"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cordon-sandbox/cordon/internal/testcap"
)

// A successful probe is remembered and taken by the next run; an entry
// written under another key (another bwrap, another boot, a changed
// sysctl) is not; Forget removes it.
func TestChooseCachedRemembersSuccess(t *testing.T) {
	testcap.RequireBwrap(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	path, err := probeCachePath()
	require.NoError(t, err)

	bw, err := bwrap.Find()
	require.NoError(t, err)
	c, cached := ChooseCached(ctx)
	require.Equal(t, Bwrap, c.Tier, "bwrap works here (RequireBwrap), so the probe succeeds: %s", c.Why)
	assert.False(t, cached)
	assert.Equal(t, bw, c.Bwrap, "the bubblewrap probed is the one the run starts")
	require.FileExists(t, path)

	c, cached = ChooseCached(ctx)
	assert.Equal(t, Bwrap, c.Tier)
	assert.True(t, cached, "the second run takes the remembered probe")
	assert.Equal(t, bw, c.Bwrap, "the bubblewrap the key was made from")

	// A stale entry (any part of the key changed) is not taken, and is
	// replaced by the fresh probe's.
	require.NoError(t, os.WriteFile(path, []byte("0000\n"), 0o600))
	_, cached = ChooseCached(ctx)
	assert.False(t, cached)
	_, cached = ChooseCached(ctx)
	assert.True(t, cached)

	Forget()
	assert.NoFileExists(t, path)
	_, cached = ChooseCached(ctx)
	assert.False(t, cached)
}

// A remembered success for one bwrap is not taken for another file on the
// PATH, and a failed probe is never remembered: stepping down is decided
// afresh on every run.
func TestChooseCachedNeverRemembersFailure(t *testing.T) {
	testcap.RequireBwrap(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	path, err := probeCachePath()
	require.NoError(t, err)
	c, _ := ChooseCached(ctx)
	require.Equal(t, Bwrap, c.Tier)
	require.FileExists(t, path)

	bin := t.TempDir()
	fake := filepath.Join(bin, "bwrap")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755))
	orig := findBwrap
	findBwrap = func() (string, error) { return fake, nil }
	t.Cleanup(func() { findBwrap = orig })

	c, cached := ChooseCached(ctx)
	assert.False(t, cached, "the entry names another bwrap")
	assert.NotEqual(t, Bwrap, c.Tier)
	assert.Contains(t, c.Why, "No permissions to create new namespace")

	Forget()
	c, cached = ChooseCached(ctx)
	assert.False(t, cached)
	assert.NotEqual(t, Bwrap, c.Tier)
	assert.NoFileExists(t, path, "a failed probe is not remembered")
}
