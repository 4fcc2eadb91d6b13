package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End to end with curl: a session's life over the Unix socket, and over
// TCP with the token.
func TestDaemonCurl(t *testing.T) {
	for _, transport := range []string{"unix", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			d := newDaemonEnv(t)
			var disc discovery
			var auth []string
			if transport == "tcp" {
				disc = d.start("--listen", "127.0.0.1:0")
				auth = []string{"-H", "Authorization: Bearer " + disc.Token}
			} else {
				disc = d.start()
			}
			call := func(args ...string) (map[string]any, int) {
				t.Helper()
				body, code := d.curl(disc, append(append([]string{}, auth...), args...)...)
				if body == "" {
					return nil, code
				}
				return jsonOf(t, body), code
			}
			h, code := call("/v1/health")
			require.Equal(t, 200, code)
			assert.EqualValues(t, disc.Pid, h["pid"])
			assert.Equal(t, transport, h["transport"])

			dir := t.TempDir()
			s, code := call("-d", fmt.Sprintf(`{"name":"c","dir":%q,"policy":"rules:\n  - deny: git push\n"}`, dir), "/v1/sessions")
			require.Equal(t, 201, code, s)
			sid := s["id"].(string)
			assert.Regexp(t, `^s-[0-9a-f]+\.`+disc.InstanceID+`$`, sid, "ids embed the instance")

			r, code := call("-d", fmt.Sprintf(`{"session_id":%q,"script":"echo out; echo err >&2; echo file > f; exit 7"}`, sid), "/v1/exec")
			require.Equal(t, 200, code, r)
			assert.Equal(t, "out\n", r["stdout"])
			assert.Equal(t, "err\n", r["stderr"])
			assert.EqualValues(t, 7, r["exit_code"])
			assert.Contains(t, r, "duration_ms")
			assert.FileExists(t, filepath.Join(dir, "f"), "the session's directory is writable")

			r, code = call("-d", `{"session_id":"c","argv":["git","push"]}`, "/v1/exec")
			require.Equal(t, 200, code, r)
			assert.EqualValues(t, 126, r["exit_code"])
			assert.Equal(t, true, r["denied"])

			r, code = call("-d", `{"session_id":"c","script":"printf '\\377\\376'"}`, "/v1/exec?encoding=base64")
			require.Equal(t, 200, code, r)
			b, err := base64.StdEncoding.DecodeString(r["stdout_b64"].(string))
			require.NoError(t, err)
			assert.Equal(t, []byte{0xff, 0xfe}, b)

			p, code := call("-d", `{"session_id":"c","script":"echo one; sleep 0.2; echo two"}`, "/v1/processes")
			require.Equal(t, 201, code, p)
			pid := p["id"].(string)
			events, code := d.curl(disc, append(append([]string{}, auth...), "-N", "/v1/processes/"+pid+"/events?follow=1")...)
			require.Equal(t, 200, code)
			assert.Regexp(t, `(?s)id: 1\nevent: stdout\ndata: \{[^\n]*"text":"one\\n".*event: exit\n.*event: end\n`, events)
			w, code := call("-X", "POST", "/v1/processes/"+pid+"/wait")
			require.Equal(t, 200, code)
			assert.EqualValues(t, 0, w["exit_code"])
			// Resuming from the last cursor gives nothing more.
			ids := regexp.MustCompile(`id: (\d+)`).FindAllStringSubmatch(events, -1)
			last := ids[len(ids)-1][1]
			events, _ = d.curl(disc, append(append([]string{}, auth...), "-H", "Last-Event-ID: "+last, "/v1/processes/"+pid+"/events")...)
			assert.Equal(t, "event: end\ndata: {}", strings.TrimSpace(events))

			_, code = call("-X", "DELETE", "/v1/sessions/"+sid)
			assert.Equal(t, 204, code)
			e, code := call("/v1/sessions/" + sid)
			assert.Equal(t, 404, code)
			assert.Equal(t, "not_found", e["code"])
			_, code = call("-X", "POST", "/v1/shutdown")
			assert.Equal(t, 202, code)
			assert.True(t, waitGone(disc.Pid, 15*time.Second))
			assert.NoFileExists(t, filepath.Join(d.dir, "daemon.json"))
		})
	}
}

// A full session lifecycle driven from Python's standard library.
func TestDaemonPythonClient(t *testing.T) {
	py := requireTool(t, "python3")
	for _, transport := range []string{"unix", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			d := newDaemonEnv(t)
			var args []string
			if transport == "tcp" {
				disc := d.start("--listen", "127.0.0.1:0")
				args = []string{"--addr", disc.Addr, "--token", disc.Token}
			} else {
				args = []string{"--socket", d.start().Socket}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, py, append([]string{"testdata/daemon_client.py"}, args...)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "PYTHON-CLIENT-OK")
		})
	}
}

// The README's curl block works as written.
func TestReadmeDaemonExamples(t *testing.T) {
	requireTool(t, "jq")
	requireTool(t, "curl")
	d := newDaemonEnv(t)
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- daemon-curl-begin -->\n```sh\n(.*?)```\n<!-- daemon-curl-end -->").FindSubmatch(readme)
	require.NotNil(t, m, "the README's curl block is marked")
	bin := t.TempDir()
	require.NoError(t, os.Symlink(cordonBin, filepath.Join(bin, "cordon")))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", string(m[1]))
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(os.Environ(), raceEnv, "PATH="+bin+":"+os.Getenv("PATH")), d.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := stdout.String()
	for _, want := range []string{
		`"transport":"unix"`,
		`{"exit_code":0,"stdout":"hello\n"}`,
		`{"exit_code":126,"denied":true,"rule":"deny \"git push\""}`,
		"AP8=\n",
		`tick 3\n"}`,
		"event: end",
		`{"exit_code":3}`,
		`"transport":"tcp"`,
		"401\n",
	} {
		assert.Contains(t, out, want)
	}
	// The comments in the block show what the commands print.
	for _, line := range strings.Split(string(m[1]), "\n") {
		if c, ok := strings.CutPrefix(line, "# "); ok && (strings.HasPrefix(c, "{") || c == "AP8=" || c == "401") && !strings.Contains(c, "...") {
			assert.Contains(t, out, c, "the README says it prints %s", c)
		}
	}
}

// The CLI client: sessions, exec in and out of them, processes.
func TestDaemonCLI(t *testing.T) {
	d := newDaemonEnv(t)
	work := t.TempDir()
	in := func(args ...string) result {
		t.Helper()
		return d.cordonOpts(runOpts{dir: work}, args...)
	}
	r := in("session", "create", "--name", "dev", "--carry", "--deny", "git push")
	require.Equal(t, 0, r.code, r.stderr)
	sid := strings.TrimSpace(r.stdout)
	r = in("session", "ls")
	assert.Contains(t, r.stdout, sid)
	assert.Contains(t, r.stdout, "dev")

	r = in("exec", "--session", "dev", "-c", "echo hi > written; cd /tmp && export STAGE=2")
	require.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(work, "written"), "the session has the directory it was created in")
	r = in("exec", "--session", "dev", "-c", "echo $PWD $STAGE")
	assert.Equal(t, "/tmp 2\n", r.stdout, "a script's cd and export are carried")
	r = in("exec", "--session", "dev", "--", "sh", "-c", "cd /; echo $PWD")
	r = in("exec", "--session", "dev", "--", "pwd")
	assert.Equal(t, "/tmp\n", r.stdout, "an argv command starts where the session is and changes nothing")
	r = in("exec", "--session", "dev", "-c", "true", "--", "true")
	assert.Equal(t, 125, r.code, "a command or a script")
	r = in("exec", "--session", sid, "--", "git", "push")
	assert.Equal(t, 126, r.code)
	assert.Contains(t, r.stderr, `cordon: denied: git push (rule: deny "git push")`)
	r = in("exec", "--session", "dev", "--deny", "x", "--", "true")
	assert.Equal(t, 125, r.code, "policy flags are for throwaway sandboxes")

	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string
	}{
		{"exit code", []string{"exec", "--", "sh", "-c", "exit 3"}, "", 3, ""},
		{"signal", []string{"exec", "--", "sh", "-c", "kill -TERM $$"}, "", 143, ""},
		{"timeout", []string{"exec", "--timeout", "200ms", "--kill-grace", "1s", "--", "sleep", "30"}, "", 124, ""},
		{"not found", []string{"exec", "--", "no-such-program"}, "", 127, ""},
		{"stdin", []string{"exec", "--stdin", "--", "wc", "-c"}, "12345", 0, "5\n"},
		{"env", []string{"exec", "--env", "A=b", "--", "sh", "-c", "echo $A"}, "", 0, "b\n"},
		{"no daemon", []string{"exec", "--no-daemon", "--", "sh", "-c", "echo in-process; exit 4"}, "", 4, "in-process\n"},
		{"policy flags", []string{"exec", "--deny", "ls", "--", "ls"}, "", 126, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := d.cordonOpts(runOpts{dir: work, stdin: tc.stdin}, tc.args...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			if tc.stdout != "" {
				assert.Equal(t, tc.stdout, strings.TrimLeft(r.stdout, " "))
			}
		})
	}

	r = in("start", "--session", "dev", "--", "sh", "-c", "echo started; echo oops >&2; sleep 300")
	require.Equal(t, 0, r.code, r.stderr)
	id := strings.TrimSpace(r.stdout)
	r = in("ps")
	assert.Contains(t, r.stdout, id)
	assert.Contains(t, r.stdout, "running")
	eventually(t, 10*time.Second, func() bool { return strings.Contains(in("logs", id).stdout, "started") }, "no output yet")
	r = in("logs", id)
	assert.Equal(t, "oops\n", r.stderr)
	r = in("kill", "--grace", "100ms", id)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "killed by signal 15, kill requested")
	r = in("wait", id)
	assert.Equal(t, 143, r.code, "wait exits as the process did")
	r = in("logs", "-f", id)
	assert.Equal(t, 0, r.code, "follow ends at the exit")
	assert.Equal(t, "started\n", r.stdout)

	r = in("start", "--", "true")
	assert.Equal(t, 125, r.code, "start needs a session")
	r = in("session", "rm", "dev")
	assert.Equal(t, 0, r.code, r.stderr)
	r = in("session", "rm", "dev")
	assert.Equal(t, 125, r.code)
	r = in("daemon", "stop")
	assert.Equal(t, 0, r.code, r.stderr)
	r = in("daemon", "status")
	assert.Equal(t, 3, r.code)
	r = in("daemon", "stop")
	assert.Equal(t, 0, r.code, "stopping a stopped daemon is fine")
}

func TestDaemonCommandsHaveExamples(t *testing.T) {
	for _, args := range [][]string{
		{"serve"}, {"daemon"}, {"daemon", "start"}, {"daemon", "stop"}, {"daemon", "status"},
		{"session"}, {"session", "create"}, {"session", "ls"}, {"session", "rm"},
		{"exec"}, {"start"}, {"ps"}, {"logs"}, {"wait"}, {"kill"},
	} {
		r := cordon(t, append(args, "--help")...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "Example", "%v has an example", args)
	}
}

// CORDON_HOST names the daemon (and CORDON_TOKEN, or the matching
// daemon.json, its token); a second "cordon serve" refuses to run.
func TestDaemonCordonHost(t *testing.T) {
	d := newDaemonEnv(t)
	disc := d.start("--listen", "127.0.0.1:0")
	for _, env := range [][]string{
		{"CORDON_HOST=http://" + disc.Addr},                              // token from daemon.json
		{"CORDON_HOST=tcp://" + disc.Addr, "CORDON_TOKEN=" + disc.Token}, // token given
	} {
		r := d.cordonOpts(runOpts{env: env}, "exec", "--", "echo", "via-host")
		assert.Equal(t, 0, r.code, "%v: %s", env, r.stderr)
		assert.Equal(t, "via-host\n", r.stdout)
	}
	// No token anywhere (another location, without daemon.json): refused at
	// once, and no second daemon is started.
	other, err := os.MkdirTemp("/var/tmp", "cdt")
	require.NoError(t, err)
	defer os.RemoveAll(other)
	require.NoError(t, os.Chmod(other, 0o700))
	r := d.cordonOpts(runOpts{env: []string{"CORDON_HOST=http://" + disc.Addr, "XDG_RUNTIME_DIR=" + other}}, "exec", "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "refused this client: missing or wrong bearer token")
	assert.Less(t, r.elapsed, 10*time.Second, "a refusal is not waited on")
	r = d.cordon("serve")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, fmt.Sprintf("already running (pid %d)", disc.Pid))
	assert.Len(t, d.daemonPids(), 1)

	// unix:// with an explicit socket; the daemon started for it serves there.
	d.stop()
	sock := filepath.Join(d.xdg, "elsewhere.sock")
	r = d.cordonOpts(runOpts{env: []string{"CORDON_HOST=unix://" + sock}}, "exec", "--", "echo", "via-socket")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "via-socket\n", r.stdout)
	assert.Equal(t, sock, d.discovery().Socket, "daemon.json names it, for clients without CORDON_HOST")
	r = d.cordon("exec", "--", "echo", "found")
	assert.Equal(t, 0, r.code, r.stderr)
}

// "cordon exec --json" prints the API's exec result: the same fields with
// the same values as POST /v1/exec answers, through the daemon and in
// process, in either encoding.
func TestExecJSONIsTheAPIResult(t *testing.T) {
	d := newDaemonEnv(t)
	disc := d.start()
	work := t.TempDir()
	r := d.cordonOpts(runOpts{dir: work}, "session", "create", "--name", "j", "--deny", "git push")
	require.Equal(t, 0, r.code, r.stderr)
	script := `echo out; printf '<\377>' >&2; git push; exit 3`

	body, code := d.curl(disc, "-d", fmt.Sprintf(`{"session_id":"j","script":%q}`, script), "/v1/exec")
	require.Equal(t, 200, code, body)
	want := jsonOf(t, body)
	// What differs from run to run.
	volatile := func(m map[string]any) map[string]any {
		for _, k := range []string{"started_at", "exited_at", "duration_ms"} {
			assert.Contains(t, m, k)
			delete(m, k)
		}
		for _, d := range m["decisions"].([]any) {
			delete(d.(map[string]any), "time")
			delete(d.(map[string]any), "pid")
		}
		return m
	}
	want = volatile(want)
	assert.Equal(t, "out\n", want["stdout"])
	assert.Equal(t, true, want["stderr_lossy"])

	r = d.cordonOpts(runOpts{dir: work}, "exec", "--json", "--session", "j", "-c", script)
	assert.Equal(t, 3, r.code, "the exit code is the command's with --json too: %s", r.stderr)
	got := jsonOf(t, r.stdout)
	assert.IsType(t, float64(0), got["duration_ms"], "a number of milliseconds, not a Go duration")
	assert.NotContains(t, got, "duration")
	assert.Equal(t, want, volatile(got))

	body, code = d.curl(disc, "-d", fmt.Sprintf(`{"session_id":"j","script":%q}`, script), "/v1/exec?encoding=base64")
	require.Equal(t, 200, code, body)
	want = volatile(jsonOf(t, body))
	r = d.cordonOpts(runOpts{dir: work}, "exec", "--json", "--encoding", "base64", "--session", "j", "-c", script)
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, want, volatile(jsonOf(t, r.stdout)))
	stderr, err := base64.StdEncoding.DecodeString(want["stderr_b64"].(string))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(stderr, []byte("<\xff>")), "byte-exact: %q", stderr)

	// In process: the same shape (no session, so no decision ids to map).
	r = d.cordonOpts(runOpts{dir: work}, "exec", "--json", "--no-daemon", "--", "sh", "-c", "echo in-process")
	assert.Equal(t, 0, r.code, r.stderr)
	got = volatile(jsonOf(t, r.stdout))
	assert.Equal(t, "in-process\n", got["stdout"])
	assert.Equal(t, []any{}, got["decisions"])
	assert.Contains(t, got, "stdout_truncated")

	r = d.cordonOpts(runOpts{dir: work}, "exec", "--json", "--encoding", "hex", "--", "true")
	assert.Equal(t, 125, r.code)
}
