package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExitCodes(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\necho hi\n"), 0o644))
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"success", []string{"--", "true"}, 0, ""},
		{"command's own code", []string{"--", "sh", "-c", "exit 3"}, 3, ""},
		{"exit 137 is the command's", []string{"--", "sh", "-c", "exit 137"}, 137, ""},
		{"killed by SIGTERM", []string{"--", "sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"killed by SIGKILL", []string{"--", "sh", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{"killed by SIGSEGV", []string{"--", "sh", "-c", "kill -SEGV $$"}, 128 + 11, ""},
		{"top-level denied", []string{"--deny", "true", "--", "true"}, 126, `cordon: denied: true (rule: deny "true")`},
		{"not executable", []string{"--", "./noexec"}, 126, "cordon: ./noexec: permission denied"},
		{"directory", []string{"--", "/usr"}, 126, "cordon: /usr:"},
		{"not found on PATH", []string{"--", "no-such-command-xyz"}, 127, "cordon: no-such-command-xyz: command not found"},
		{"not found by path", []string{"--", "./missing"}, 127, "cordon: ./missing: no such file or directory"},
		{"bad flag", []string{"--bogus", "--", "true"}, 125, "unknown flag: --bogus"},
		{"bad --net", []string{"--net", "wifi", "--", "true"}, 125, `--net: unknown network mode "wifi"`},
		{"bad --default", []string{"--default", "maybe", "--", "true"}, 125, "--default"},
		{"timeout", []string{"--timeout", "200ms", "--kill-grace", "100ms", "--", "sleep", "30"}, 124, "cordon: timed out after 200ms"},
		{"timeout, TERM ignored", []string{"--timeout", "200ms", "--kill-grace", "200ms", "--", "sh", "-c", "trap '' TERM; sleep 30"}, 124, "timed out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCordon(t, runOpts{dir: dir}, tc.args...)
			assert.Equal(t, tc.code, r.code, "stderr: %s", r.stderr)
			if tc.stderr != "" {
				assert.Contains(t, r.stderr, tc.stderr)
			}
			assert.NotEqual(t, 255, r.code)
		})
	}
	requireNoLeftovers(t)
}

func TestRunSubcommandAndShorthandAgree(t *testing.T) {
	requireSeccompNotify(t)
	a := cordon(t, "run", "--deny", "true", "--", "sh", "-c", "true; exit 5")
	b := cordon(t, "--deny", "true", "--", "sh", "-c", "true; exit 5")
	assert.Equal(t, 5, a.code)
	assert.Equal(t, a.code, b.code)
	assert.Equal(t, a.stderr, b.stderr)
	c := cordon(t, "sh", "-c", "exit 4") // no "--": the first word starts the command
	assert.Equal(t, 4, c.code)
}

func TestBwrapMissing(t *testing.T) {
	requireSeccompNotify(t)
	// A PATH without bwrap and the bwrap tier named: cordon must say what
	// to install, exit 125 (auto steps down instead: isolation_test.go).
	r := runCordon(t, runOpts{env: []string{"PATH=/nonexistent"}}, "--isolation", "bwrap", "--", "/bin/true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "bubblewrap (bwrap) not found")
	assert.Contains(t, r.stderr, "apt-get install bubblewrap")
}

func TestBwrapEarlyFailureIsReportedFast(t *testing.T) {
	requireSeccompNotify(t)
	r := cordon(t, "--ro", "/nonexistent/cordon-test", "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "cordon: sandbox setup failed: bwrap: Can't find source path /nonexistent/cordon-test")
	assert.Less(t, r.elapsed.Seconds(), 2.0, "an early bwrap failure is reported within a second or so, not after a timeout")
}
