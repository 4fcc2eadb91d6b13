package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The "Daemon" section of process-edge-cases.md, items 27-38, against the
// real binary.

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// staleFiles leaves what a SIGKILLed daemon leaves: daemon.json naming pid
// and a socket file nobody listens on.
func (d *daemonEnv) staleFiles(pid int) {
	d.t.Helper()
	require.NoError(d.t, os.MkdirAll(d.dir, 0o700))
	require.NoError(d.t, os.WriteFile(filepath.Join(d.dir, "daemon.lock"), nil, 0o600))
	sock := filepath.Join(d.dir, "daemon.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(d.t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	b, _ := json.Marshal(map[string]any{"pid": pid, "instance_id": "0badc0de", "socket": sock})
	require.NoError(d.t, os.WriteFile(filepath.Join(d.dir, "daemon.json"), b, 0o600))
}

// 27. A stale pid/discovery file whose pid is dead: cleaned up only when the
// lock is free; a new daemon starts.
func TestDaemonStaleFilesCleanedUnderLock(t *testing.T) {
	d := newDaemonEnv(t)
	d.staleFiles(deadPid(t))

	r := d.cordon("daemon", "status")
	assert.Equal(t, 3, r.code, "stopped: %s", r.stdout)
	assert.Contains(t, r.stdout, "stale")

	t.Run("while something holds the lock, nothing is removed and nothing starts", func(t *testing.T) {
		f, err := os.OpenFile(filepath.Join(d.dir, "daemon.lock"), os.O_RDWR|os.O_CREATE, 0o600)
		require.NoError(t, err)
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
		before, err := os.ReadFile(filepath.Join(d.dir, "daemon.json"))
		require.NoError(t, err)
		r := d.cordon("daemon", "start", "--timeout", "1s")
		assert.Equal(t, 125, r.code)
		assert.Contains(t, r.stderr, "alive but does not answer")
		after, err := os.ReadFile(filepath.Join(d.dir, "daemon.json"))
		require.NoError(t, err)
		assert.Equal(t, before, after, "daemon.json untouched while the lock is held")
		assert.FileExists(t, filepath.Join(d.dir, "daemon.sock"))
		assert.Empty(t, d.daemonPids(), "no daemon started")
		f.Close()
	})

	disc := d.start()
	assert.NotEqual(t, "0badc0de", disc.InstanceID, "a new daemon replaced the stale files")
	r = d.cordon("exec", "--", "echo", "after-stale")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "after-stale\n", r.stdout)
}

// 28. A pid file whose pid now belongs to an unrelated process: the lock
// decides; the process is neither trusted nor touched.
func TestDaemonPidOfUnrelatedProcess(t *testing.T) {
	d := newDaemonEnv(t)
	bystander := exec.Command("sleep", "300")
	require.NoError(t, bystander.Start())
	defer func() { _ = bystander.Process.Kill(); _ = bystander.Wait() }()
	d.staleFiles(bystander.Process.Pid)

	r := d.cordon("daemon", "status")
	assert.Equal(t, 3, r.code, "not trusted: %s", r.stdout)
	r = d.cordon("exec", "--", "echo", "fresh")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "fresh\n", r.stdout)
	disc := d.discovery()
	assert.NotEqual(t, bystander.Process.Pid, disc.Pid)
	assert.NoError(t, bystander.Process.Signal(syscall.Signal(0)), "the bystander was not signalled")
	var st syscall.WaitStatus
	pid, _ := syscall.Wait4(bystander.Process.Pid, &st, syscall.WNOHANG, nil)
	assert.Zero(t, pid, "the bystander still runs")
}

// 29. kill(pid, 0) answering EPERM: the daemon counts as alive; no file is
// deleted; no second daemon starts. Real processes: cordon runs under a
// seccomp filter where kill() answers EPERM and flock() ENOLCK (a
// filesystem without locks), so the pid is all it can go by.
func TestDaemonKillEPERMCountsAsAlive(t *testing.T) {
	d := newDaemonEnv(t)
	// A live process that does not answer: it could be a hung daemon.
	hung := exec.Command("sleep", "300")
	require.NoError(t, hung.Start())
	defer func() { _ = hung.Process.Kill(); _ = hung.Wait() }()
	d.staleFiles(hung.Process.Pid)
	before, err := os.ReadFile(filepath.Join(d.dir, "daemon.json"))
	require.NoError(t, err)

	r := d.underSeccomp("kill=EPERM,flock=ENOLCK", "daemon", "status")
	assert.Equal(t, 1, r.code, "alive, not answering: %s%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "EPERM")

	r = d.underSeccomp("kill=EPERM,flock=ENOLCK", "daemon", "start", "--timeout", "1s")
	assert.Equal(t, 125, r.code, r.stdout)
	assert.Contains(t, r.stderr, "alive but does not answer")
	after, err := os.ReadFile(filepath.Join(d.dir, "daemon.json"))
	require.NoError(t, err)
	assert.Equal(t, before, after, "no file deleted")
	assert.FileExists(t, filepath.Join(d.dir, "daemon.sock"))
	assert.Empty(t, d.daemonPids(), "no second daemon")

	// Without the filter the lock is checkable, and says the files are
	// stale: the same situation resolves to a new daemon.
	r = d.cordon("daemon", "status")
	assert.Equal(t, 3, r.code, r.stdout)
}

// 30. Daemon and client with different TMPDIR values resolve the same
// location.
func TestDaemonDifferentTMPDIR(t *testing.T) {
	d := newDaemonEnv(t)
	tmpA, tmpB := t.TempDir(), t.TempDir()
	r := d.cordonOpts(runOpts{env: []string{"TMPDIR=" + tmpA}}, "daemon", "start")
	require.Equal(t, 0, r.code, r.stderr)
	disc := d.discovery()
	for _, tmp := range []string{tmpB, "/nonexistent", ""} {
		r := d.cordonOpts(runOpts{env: []string{"TMPDIR=" + tmp}}, "daemon", "status", "--json")
		require.Equal(t, 0, r.code, "TMPDIR=%q: %s%s", tmp, r.stdout, r.stderr)
		assert.Equal(t, disc.InstanceID, jsonOf(t, r.stdout)["health"].(map[string]any)["instance_id"])
		r = d.cordonOpts(runOpts{env: []string{"TMPDIR=" + tmp}}, "exec", "--", "true")
		assert.Equal(t, 0, r.code, r.stderr)
	}
	assert.Len(t, d.daemonPids(), 1)
	entries, _ := os.ReadDir(tmpA)
	assert.Empty(t, entries, "nothing of the daemon's lives under TMPDIR")
}

// 31. A socket path longer than sun_path: TCP on loopback with a token.
// (XDG_RUNTIME_DIR unset, with a wrong mode or owner, or a symlink: see
// daemon.TestLocateFallbacks.)
func TestDaemonLongSocketPath(t *testing.T) {
	d := newDaemonEnv(t)
	deep := filepath.Join(d.xdg, strings.Repeat("d", 60), strings.Repeat("e", 60))
	require.NoError(t, os.MkdirAll(deep, 0o700))
	d.env = []string{"XDG_RUNTIME_DIR=" + deep}
	d.dir = filepath.Join(deep, "cordon")
	d.xdg = deep
	require.Greater(t, len(filepath.Join(d.dir, "daemon.sock")), 107)

	disc := d.start()
	assert.Empty(t, disc.Socket)
	assert.NotZero(t, disc.Port)
	assert.Len(t, disc.Token, 64)
	r := d.cordon("exec", "--", "echo", "over-tcp")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "over-tcp\n", r.stdout)

	t.Run("an explicit --socket that does not fit is an error that reaches the starter", func(t *testing.T) {
		d.stop()
		r := d.cordon("daemon", "start", "--socket", filepath.Join(deep, "x.sock"))
		assert.Equal(t, 125, r.code)
		assert.Contains(t, r.stderr, "over the 107 that fit in sun_path")
	})
}

// 32. socket()/bind() of the Unix socket failing with EPERM: TCP
// 127.0.0.1:0 with a token; start-up errors always reach the starter.
func TestDaemonSocketEPERM(t *testing.T) {
	d := newDaemonEnv(t)
	r := d.underSeccomp("socket-unix=EPERM", "daemon", "start")
	require.Equal(t, 0, r.code, "%s%s", r.stdout, r.stderr)
	disc := d.discovery()
	assert.Empty(t, disc.Socket, "no socket could be made")
	assert.NotZero(t, disc.Port)
	fi, err := os.Stat(filepath.Join(d.dir, "daemon.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	log, _ := os.ReadFile(filepath.Join(d.dir, "daemon.log"))
	assert.Contains(t, string(log), "operation not permitted", "the fallback says why")

	// A client that cannot make Unix sockets either uses TCP with the token.
	r = d.underSeccomp("socket-unix=EPERM", "exec", "--", "echo", "via-tcp")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "via-tcp\n", r.stdout)

	t.Run("start-up errors reach the starter", func(t *testing.T) {
		d.stop()
		tests := []struct {
			name, rules string
			args        []string
			want        string
		}{
			{"explicit socket under EPERM", "socket-unix=EPERM", []string{"--socket", filepath.Join(d.xdg, "x.sock")}, "socket: operation not permitted"},
			{"explicit socket in a missing directory", "", []string{"--socket", "/nonexistent/dir/x.sock"}, "bind: no such file or directory"},
			{"a listen address off loopback", "", []string{"--listen", "10.1.2.3:0"}, "only loopback addresses"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				args := append([]string{"daemon", "start"}, tc.args...)
				var r result
				if tc.rules != "" {
					r = d.underSeccomp(tc.rules, args...)
				} else {
					r = d.cordon(args...)
				}
				assert.Equal(t, 125, r.code, r.stdout)
				assert.Contains(t, r.stderr, "the cordon daemon did not start")
				assert.Contains(t, r.stderr, tc.want)
				eventually(t, 5*time.Second, func() bool { return len(d.daemonPids()) == 0 }, "the failed daemon is still there")
			})
		}
	})
}

// 33. N simultaneous auto-starts produce one daemon.
func TestDaemonConcurrentAutoStart(t *testing.T) {
	d := newDaemonEnv(t)
	const n = 6
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.cordon("exec", "--", "echo", fmt.Sprint("client-", i))
		}()
	}
	wg.Wait()
	for i, r := range results {
		assert.Equal(t, 0, r.code, "client %d: %s", i, r.stderr)
		assert.Equal(t, fmt.Sprintf("client-%d\n", i), r.stdout)
	}
	assert.Len(t, d.daemonPids(), 1, "one daemon")
	disc := d.discovery()
	assert.Equal(t, []int{disc.Pid}, d.daemonPids())
}

// 34. Missing or wrong token: 401; a foreign uid on the Unix socket:
// refused; bad Host or any Origin: refused; discovery file mode 0600.
func TestDaemonAccessRules(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		d := newDaemonEnv(t)
		disc := d.start("--listen", "127.0.0.1:0")
		fi, err := os.Stat(filepath.Join(d.dir, "daemon.json"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		auth := "Authorization: Bearer " + disc.Token
		tests := []struct {
			name   string
			args   []string
			status int
		}{
			{"token", []string{"-H", auth}, 200},
			{"no token", nil, 401},
			{"wrong token", []string{"-H", "Authorization: Bearer " + strings.Repeat("0", 64)}, 401},
			{"token as a query is not a token", nil, 401},
			{"bad Host", []string{"-H", auth, "-H", "Host: attacker.example"}, 403},
			{"Origin", []string{"-H", auth, "-H", "Origin: http://localhost"}, 403},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				path := "/v1/health"
				if strings.Contains(tc.name, "query") {
					path += "?token=" + disc.Token
				}
				body, code := d.curl(disc, append(tc.args, path)...)
				assert.Equal(t, tc.status, code, body)
				if code != 200 {
					assert.Contains(t, body, `"code"`)
				}
			})
		}
	})
	t.Run("unix", func(t *testing.T) {
		d := newDaemonEnv(t)
		disc := d.start()
		fi, err := os.Stat(filepath.Join(d.dir, "daemon.json"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		fi, err = os.Stat(disc.Socket)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the socket is 0600 in a 0700 directory")
		body, code := d.curl(disc, "-H", "Origin: null", "/v1/health")
		assert.Equal(t, 403, code, body)
		body, code = d.curl(disc, "-H", "Host: attacker.example", "/v1/health")
		assert.Equal(t, 403, code, body)

		// Another uid: the directory and socket modes keep it out; open
		// them up, and the peer check (SO_PEERCRED) still refuses it.
		if os.Geteuid() != 0 {
			testcap.SkipOrFail(t, "needs root to act as another uid")
		}
		curl := requireTool(t, "curl")
		other := func() (string, error) {
			cmd := exec.Command(curl, "-sS", "--max-time", "10", "-w", "\n%{http_code}", "--unix-socket", disc.Socket, "http://localhost/v1/health")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		out, err := other()
		assert.Error(t, err, "uid 65534 cannot even reach the socket: %s", out)
		require.NoError(t, os.Chmod(d.xdg, 0o755))
		require.NoError(t, os.Chmod(d.dir, 0o755))
		require.NoError(t, os.Chmod(disc.Socket, 0o666))
		out, err = other()
		require.NoError(t, err, out)
		assert.True(t, strings.HasSuffix(out, "\n403"), "refused by the peer check: %s", out)
		assert.Contains(t, out, "uid 65534 may not use this daemon")
		require.NoError(t, os.Chmod(d.xdg, 0o700))
		require.NoError(t, os.Chmod(d.dir, 0o700))
	})
}

// 35. After a daemon restart, old ids answer a clear stale error.
func TestDaemonStaleIDsAfterRestart(t *testing.T) {
	d := newDaemonEnv(t)
	r := d.cordon("session", "create", "--name", "old")
	require.Equal(t, 0, r.code, r.stderr)
	sid := strings.TrimSpace(r.stdout)
	r = d.cordon("start", "--session", "old", "--", "sleep", "300")
	require.Equal(t, 0, r.code, r.stderr)
	pid := strings.TrimSpace(r.stdout)
	r = d.cordon("daemon", "stop")
	require.Equal(t, 0, r.code, r.stderr)
	disc := d.start()

	for _, path := range []string{"/v1/processes/" + pid, "/v1/sessions/" + sid} {
		body, code := d.curl(disc, path)
		assert.Equal(t, 409, code, body)
		e := jsonOf(t, body)
		assert.Equal(t, "stale", e["code"])
		assert.Contains(t, e["message"], "previous daemon instance")
	}
	r = d.cordon("wait", pid)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "stale")
	// An id of this daemon that does not exist is simply not found.
	body, code := d.curl(disc, "/v1/processes/p-00."+"s-00."+disc.InstanceID)
	assert.Equal(t, 404, code, body)
	// The name is free again: the old session is gone.
	r = d.cordon("session", "create", "--name", "old")
	assert.Equal(t, 0, r.code, r.stderr)
}

// 36. A client disconnect cancels a running /exec, but not a started
// process.
func TestDaemonDisconnect(t *testing.T) {
	d := newDaemonEnv(t)
	disc := d.start()
	body, code := d.curl(disc, "-X", "POST", "-d", `{"dir":"/"}`, "/v1/sessions")
	require.Equal(t, 201, code, body)
	sid := jsonOf(t, body)["id"].(string)

	// curl gives up after a second: the exec's tree must go with it.
	curl := requireTool(t, "curl")
	out, _ := exec.Command(curl, "-sS", "--max-time", "1", "--unix-socket", disc.Socket,
		"-d", fmt.Sprintf(`{"session_id":%q,"script":"sleep 7613 & sleep 7612; wait"}`, sid), "http://localhost/v1/exec").CombinedOutput()
	assert.Contains(t, string(out), "timed out", "curl disconnected")
	eventually(t, 10*time.Second, func() bool { return len(sleeping("761")) == 0 },
		"the disconnected exec's tree is still running: %v", sleeping("761"))
	// Without a session too (a throwaway sandbox).
	_, _ = exec.Command(curl, "-sS", "--max-time", "1", "--unix-socket", disc.Socket,
		"-d", `{"argv":["sleep","7611"]}`, "http://localhost/v1/exec").CombinedOutput()
	eventually(t, 10*time.Second, func() bool { return len(sleeping("7611")) == 0 }, "throwaway exec survived")

	body, code = d.curl(disc, "-d", fmt.Sprintf(`{"session_id":%q,"argv":["sleep","7614"]}`, sid), "/v1/processes")
	require.Equal(t, 201, code, body)
	id := jsonOf(t, body)["id"].(string)
	// A follower leaves; the process stays.
	_, _ = exec.Command(curl, "-sS", "--max-time", "1", "--unix-socket", disc.Socket,
		"http://localhost/v1/processes/"+id+"/events?follow=1").CombinedOutput()
	time.Sleep(300 * time.Millisecond)
	body, code = d.curl(disc, "/v1/processes/"+id)
	require.Equal(t, 200, code, body)
	assert.Equal(t, "running", jsonOf(t, body)["state"])
	assert.Len(t, sleeping("7614"), 1)
	body, code = d.curl(disc, "-d", `{"grace_ms":0}`, "/v1/processes/"+id+"/kill")
	require.Equal(t, 200, code, body)
	assert.EqualValues(t, 9, jsonOf(t, body)["signal"])
}

// 37. Sandboxed processes cannot reach the daemon's socket, port file or
// token: the daemon's directory is hidden in every sandbox it makes (and in
// cordon run's). A read-only mount would not do: a Unix socket on it is
// still connectable.
func TestDaemonUnreachableFromSandbox(t *testing.T) {
	py := requireTool(t, "python3")
	probe := func(dir, sock string) string {
		return fmt.Sprintf(`ls -A %[1]s; echo "listing-done"; cat %[1]s/daemon.json 2>/dev/null && echo READ-DISCOVERY; %[3]s -c '
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(%[2]q); print("CONNECTED")
except OSError as e:
    print("refused", e.errno)
'`, dir, sock, py)
	}
	t.Run("unix", func(t *testing.T) {
		d := newDaemonEnv(t)
		if strings.HasPrefix(d.dir, "/tmp/") {
			testcap.SkipOrFail(t, "no /var/tmp: a daemon directory under /tmp is hidden by the sandbox's own /tmp, which proves nothing")
		}
		disc := d.start()
		script := probe(d.dir, disc.Socket)
		for _, args := range [][]string{
			{"exec", "--", "sh", "-c", script},                // a throwaway sandbox of the daemon
			{"exec", "--no-daemon", "--", "sh", "-c", script}, // in process
			{"--", "sh", "-c", script},                        // cordon run
		} {
			r := d.cordon(args...)
			require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
			assert.True(t, strings.HasPrefix(r.stdout, "listing-done\n"), "%v: the directory looks empty: %q", args, r.stdout)
			assert.NotContains(t, r.stdout, "READ-DISCOVERY")
			assert.NotContains(t, r.stdout, "CONNECTED")
			assert.Contains(t, r.stdout, "refused 2", "ENOENT: no socket there")
		}
		// And through a session.
		r := d.cordon("session", "create", "--name", "s")
		require.Equal(t, 0, r.code, r.stderr)
		r = d.cordon("exec", "--session", "s", "--", "sh", "-c", script)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "CONNECTED")
		assert.NotContains(t, r.stdout, "READ-DISCOVERY")
	})
	t.Run("tcp", func(t *testing.T) {
		d := newDaemonEnv(t)
		disc := d.start("--listen", "127.0.0.1:0")
		curl := requireTool(t, "curl")
		script := fmt.Sprintf(`cat %s/daemon.json 2>/dev/null && echo READ-DISCOVERY; %s -s -o /dev/null -w '%%{http_code}\n' http://127.0.0.1:%d/v1/health`, d.dir, curl, disc.Port)
		r := d.cordon("exec", "--net", "host", "--", "sh", "-c", script)
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "READ-DISCOVERY")
		assert.Equal(t, "401\n", r.stdout, "the port is reachable with --net host, the token is not")
	})
}

// 38. SIGTERM to the daemon closes its sessions within a deadline and
// removes its files; SIGKILL leaves no sandbox process behind.
func TestDaemonSIGTERM(t *testing.T) {
	d := newDaemonEnv(t)
	disc := d.start()
	for _, name := range []string{"a", "b"} {
		r := d.cordon("session", "create", "--name", name)
		require.Equal(t, 0, r.code, r.stderr)
		r = d.cordon("start", "--session", name, "--", "sh", "-c", "trap '' TERM; sleep 7615")
		require.Equal(t, 0, r.code, r.stderr)
	}
	// An exec in flight, too.
	go d.cordon("exec", "--session", "a", "--", "sleep", "7616")
	eventually(t, 10*time.Second, func() bool { return len(sleeping("761")) == 3 }, "processes did not start")

	start := time.Now()
	require.NoError(t, syscall.Kill(disc.Pid, syscall.SIGTERM))
	require.True(t, waitGone(disc.Pid, 15*time.Second), "the daemon did not exit")
	took := time.Since(start)
	assert.Less(t, took, 12*time.Second, "bounded by the shutdown deadline")
	assert.Empty(t, sleeping("761"), "every session was closed")
	assert.NoFileExists(t, filepath.Join(d.dir, "daemon.json"))
	assert.NoFileExists(t, disc.Socket)
	requireNoLeftovers(t)
	t.Logf("SIGTERM to exit with 2 sessions, 3 processes (one ignoring SIGTERM): %v", took)
}

func TestDaemonSIGKILL(t *testing.T) {
	d := newDaemonEnv(t)
	disc := d.start()
	r := d.cordon("session", "create", "--name", "k")
	require.Equal(t, 0, r.code, r.stderr)
	r = d.cordon("start", "--session", "k", "--", "sh", "-c", "setsid -f sleep 7617; sleep 7618")
	require.Equal(t, 0, r.code, r.stderr)
	go d.cordon("exec", "--", "sleep", "7619") // a throwaway sandbox in flight
	eventually(t, 10*time.Second, func() bool { return len(sleeping("761")) == 3 }, "processes did not start")
	bwraps := processesWith("bwrap")
	require.NotEmpty(t, bwraps)

	require.NoError(t, syscall.Kill(disc.Pid, syscall.SIGKILL))
	require.True(t, waitGone(disc.Pid, 5*time.Second))
	eventually(t, 5*time.Second, func() bool { return len(sleeping("761")) == 0 },
		"sandboxed processes outlived the daemon: %v", sleeping("761"))
	requireNoLeftovers(t)

	// What it left (daemon.json, the socket) is stale, and the next daemon
	// replaces it.
	r = d.cordon("daemon", "status")
	assert.Equal(t, 3, r.code, r.stdout)
	assert.Contains(t, r.stdout, "stale")
	next := d.start()
	assert.NotEqual(t, disc.InstanceID, next.InstanceID)
}
