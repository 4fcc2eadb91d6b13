package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Run from a directory that was deleted (a build removed the directory the
// shell is in), cordon says so and what to do, not that bubblewrap failed.
func TestDeletedWorkingDirectory(t *testing.T) {
	requireSeccompNotify(t)
	for _, args := range [][]string{{"run", "--", "true"}, {"exec", "--no-daemon", "--", "true"}} {
		t.Run(args[0], func(t *testing.T) {
			dir := t.TempDir()
			script := `cd gone && rmdir ../gone && exec "$@"`
			r := runCordonVia(t, runOpts{dir: dir, timeout: startBound},
				append([]string{"sh", "-c", "mkdir gone && " + script, "sh", cordonBin}, args...)...)
			assert.Equal(t, 125, r.code, r.stderr)
			assert.Contains(t, r.stderr, "cordon: the current directory no longer exists")
			assert.Contains(t, r.stderr, "cd to a directory that exists")
			assert.NotContains(t, r.stderr, "fork/exec")
			assert.NotContains(t, r.stderr, "cordon doctor")
		})
	}
}
