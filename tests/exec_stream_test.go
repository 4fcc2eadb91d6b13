package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExecStreamsOutput: cordon exec passes a command's output on while
// the command runs. The command prints a line, then waits for a file that
// the test creates only after it has read that line: if the output came
// only at the end, the command would never end (the test's context bounds
// it and fails).
func TestExecStreamsOutput(t *testing.T) {
	d := newDaemonEnv(t)
	dir := t.TempDir()
	r := d.cordonOpts(runOpts{dir: dir}, "session", "create", "--name", "stream", "--carry")
	require.Equal(t, 0, r.code, r.stderr)
	script := `echo first; echo err-first >&2; while [ ! -e go-on ]; do sleep 0.05; done; echo second`
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"daemon throwaway", []string{"exec", "-c", script}},
		{"daemon session", []string{"exec", "--session", "stream", "-c", script}},
		{"no daemon", []string{"exec", "--no-daemon", "-c", script}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(dir, "go-on")
			os.Remove(marker)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, cordonBin, tc.args...)
			cmd.Dir = dir
			cmd.Env = append(append(os.Environ(), raceEnv), d.env...)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			out := bufio.NewReader(stdout)
			line, err := out.ReadString('\n')
			require.NoError(t, err, "the first line arrives while the command runs")
			assert.Equal(t, "first\n", line)
			errLine, err := bufio.NewReader(stderr).ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, "err-first\n", errLine, "stderr streams too")
			require.NoError(t, os.WriteFile(marker, nil, 0o644))
			rest, err := io.ReadAll(out)
			require.NoError(t, err)
			assert.Equal(t, "second\n", string(rest), "nothing is printed twice")
			require.NoError(t, cmd.Wait())
			require.NoError(t, ctx.Err())
		})
	}

	// --json keeps the one-shape result.
	r = d.cordonOpts(runOpts{dir: dir}, "exec", "--json", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	assert.Equal(t, 3, r.code)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
	assert.Equal(t, "out\n", res["stdout"])
	assert.Equal(t, "err\n", res["stderr"])
	assert.Equal(t, float64(3), res["exit_code"])

	// The API: curl sees the stream's events, then the result.
	disc := d.discovery()
	body, code := d.curl(disc, "-N", "-X", "POST", "-H", "Content-Type: application/json",
		"--data", `{"argv":["sh","-c","echo one; echo two >&2"],"session_id":"stream"}`, "/v1/exec?stream=1")
	require.Equal(t, 200, code, body)
	iOne, iTwo, iRes := strings.Index(body, "event: stdout"), strings.Index(body, "event: stderr"), strings.Index(body, "event: result")
	assert.True(t, iOne >= 0 && iTwo >= 0 && iRes > iOne && iRes > iTwo, "output events come before the result:\n%s", body)
	assert.Contains(t, body, `"text":"one\n"`)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(body), "event: end\ndata: {}"), body)
}

// TestExecDenialLinesAreLive: a denial is printed when it happens, while
// the command runs on, and only once.
func TestExecDenialLinesAreLive(t *testing.T) {
	d := newDaemonEnv(t)
	dir := t.TempDir()
	script := `git push origin main 2>/dev/null; while [ ! -e go-on ]; do sleep 0.05; done; echo done`
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"daemon", []string{"exec", "--deny", "git push", "-c", script}},
		{"no daemon", []string{"exec", "--no-daemon", "--deny", "git push", "-c", script}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(dir, "go-on")
			os.Remove(marker)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, cordonBin, tc.args...)
			cmd.Dir = dir
			cmd.Env = append(append(os.Environ(), raceEnv), d.env...)
			var stdout strings.Builder
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			errs := bufio.NewReader(stderr)
			line, err := errs.ReadString('\n')
			require.NoError(t, err, "the denial is printed while the command runs")
			assert.Equal(t, "cordon: denied: git push origin main (rule: deny \"git push\")\n", line)
			require.NoError(t, os.WriteFile(marker, nil, 0o644))
			rest, err := io.ReadAll(errs)
			require.NoError(t, err)
			assert.NotContains(t, string(rest), "cordon: denied", "printed once")
			require.NoError(t, cmd.Wait())
			assert.Equal(t, "done\n", stdout.String())
		})
	}
}
