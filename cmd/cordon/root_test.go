package main

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/cordon-sandbox/cordon/runner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stderrOf runs f with os.Stderr redirected and returns what it wrote.
func stderrOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = saved }()
	f()
	w.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	r.Close()
	return string(b)
}

// TestExitCode pins the one place errors become exit codes, and what each
// says on stderr.
func TestExitCode(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantCode   int
		wantStderr string
	}{
		{name: "success", err: nil, wantCode: 0},
		{name: "the command's own code", err: &exitError{code: 3}, wantCode: 3},
		{name: "a client command's failure: no usage hint", err: failed(errors.New("no daemon")), wantCode: 125,
			wantStderr: "cordon: no daemon\n"},
		{name: "a failure already reported", err: errReported, wantCode: 125},
		{name: "interrupted: 128+SIGINT", err: errInterrupted, wantCode: 130, wantStderr: "cordon: interrupted\n"},
		{name: "a setup failure says what to do itself", err: &runner.SetupError{Err: errors.New("bwrap: no"), Hint: "run 'cordon doctor' to check this host"},
			wantCode: 125, wantStderr: "cordon: sandbox setup failed: bwrap: no; run 'cordon doctor' to check this host\n"},
		{name: "a command not found", err: &runner.ExecError{Path: "nope", Errno: 2}, wantCode: 127,
			wantStderr: "cordon: nope: command not found\n"},
		{name: "a denied command: the denial line was printed", err: &runner.ExecError{Path: "git", Errno: 1, Denied: true}, wantCode: 126},
		{name: "a mis-call gets the usage hint", err: errors.New("unknown flag: --nope"), wantCode: 125,
			wantStderr: "cordon: unknown flag: --nope\nRun 'cordon --help' for usage.\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			stderr := stderrOf(t, func() { code = exitCode(tc.err) })
			assert.Equal(t, tc.wantCode, code)
			assert.Equal(t, tc.wantStderr, stderr)
		})
	}
}

// TestRootRuns pins which command lines build the command tree without its
// subcommands: only "cordon [flags] -- CMD", which cannot name one. The
// rest, a subcommand's name anywhere before "--" included, get the whole
// tree, as does anything that does not parse.
func TestRootRuns(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--", "/bin/true"}, true},
		{[]string{"--policy", "p.yaml", "--deny", "git push", "--", "bash", "-c", "x"}, true},
		{[]string{"--net=none", "--timeout", "5s", "--", "session", "ls"}, true}, // after "--": the command's words
		{[]string{"run", "--", "x"}, false},
		{[]string{"session", "ls"}, false},
		{[]string{"--policy", "p.yaml", "session", "--", "x"}, false},
		{[]string{"bash"}, false},
		{[]string{"--"}, false},
		{nil, false},
		{[]string{"--help"}, false},
		{[]string{"-h", "--", "x"}, false},
		{[]string{"--version"}, false},
		{[]string{"--no-such-flag", "--", "x"}, false},
		{[]string{"--timeout", "--", "x"}, false}, // "--" taken as the value, which does not parse
	} {
		assert.Equal(t, tc.want, rootRuns(tc.args), "%q", tc.args)
	}
	// Built either way, the root runs the same command line.
	assert.Empty(t, newRootCmd(false).Commands())
	assert.NotEmpty(t, newRootCmd(true).Commands())
}
