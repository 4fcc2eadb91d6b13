package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeProgram installs an executable named name in a fresh bin directory
// that prints its arguments, so rules can be tested on names like "git"
// without depending on the real tool.
func fakeProgram(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	writeScript(t, bin, name, `echo "`+name+` ran: $*"`)
	return dir
}

func TestNestedExecsAreDecided(t *testing.T) {
	requireSeccompNotify(t)
	tests := []struct {
		name   string
		script string // run by sh -c in a dir whose bin/ holds a fake git
		argv0  string // how the denial line shows the program
	}{
		{"direct", `git push origin main`, "git"},
		{"sh -c", `sh -c 'git push origin main'`, "git"},
		{"bash -c", `bash -c 'git push origin main'`, "git"},
		{"env", `env git push origin main`, "git"},
		{"xargs", `echo origin main | xargs git push`, "git"},
		{"find -exec", `find bin -name git -exec {} push origin main \; ; test -z "$(find bin -name git -exec {} push origin main \; 2>&1 | grep 'not permitted')"`, "bin/git"},
		{"nested three deep", `sh -c "bash -c 'env git push origin main'"`, "git"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeProgram(t, "git")
			env := []string{"PATH=" + filepath.Join(dir, "bin") + ":" + os.Getenv("PATH")}

			allowed := runCordon(t, runOpts{dir: dir, env: env}, "--deny", "git commit", "--", "sh", "-c", tc.script)
			assert.Equal(t, 0, allowed.code, "stderr: %s", allowed.stderr)
			assert.Contains(t, allowed.stdout, "git ran: push origin main")
			assert.NotContains(t, allowed.stderr, "cordon: denied")

			denied := runCordon(t, runOpts{dir: dir, env: env}, "--deny", "git push", "--", "sh", "-c", tc.script)
			assert.NotEqual(t, 0, denied.code)
			assert.NotContains(t, denied.stdout, "git ran", "the denied program must not start")
			assert.Contains(t, denied.stderr, `cordon: denied: `+tc.argv0+` push origin main (rule: deny "git push")`)
			assert.Contains(t, strings.ToLower(denied.stderr), "operation not permitted",
				"the caller sees EPERM: %s", denied.stderr)
		})
	}
	requireNoLeftovers(t)
}

func TestDenialLineIsPrintedOncePerExec(t *testing.T) {
	requireSeccompNotify(t)
	dir := fakeProgram(t, "git")
	env := []string{"PATH=" + filepath.Join(dir, "bin") + ":" + filepath.Join(dir, "bin") + ":" + os.Getenv("PATH")}
	// dash retries every PATH entry after EPERM; the repeat is not news.
	r := runCordon(t, runOpts{dir: dir, env: env}, "--deny", "git", "--", "sh", "-c", "git status")
	assert.Equal(t, 1, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
}

func TestPathProbesAreNotDenials(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	bin := fakeProgramVouched(t, "tool") // allowed by name: not planted by the sandbox
	// Two missing directories before the real one: the shell's execve on
	// each must fail with ENOENT, silently.
	env := []string{"PATH=/nonexistent1:/nonexistent2:" + bin + ":" + os.Getenv("PATH")}
	r := runCordon(t, runOpts{dir: dir, env: env}, "--default", "deny", "--allow", "sh", "--allow", "tool", "--", "sh", "-c", "tool x")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "tool ran: x")
	assert.NotContains(t, r.stderr, "cordon: denied")
}

func TestAllowlistMode(t *testing.T) {
	requireSeccompNotify(t)
	r := cordon(t, "--default", "deny", "--allow", "sh", "--allow", "ls", "--", "sh", "-c", "ls / >/dev/null && echo ls-ok; cat /etc/hostname; echo cat=$?")
	assert.Contains(t, r.stdout, "ls-ok")
	assert.Contains(t, r.stdout, "cat=126")
	assert.Contains(t, r.stderr, `cordon: denied: cat /etc/hostname (rule: default deny)`)
}

func TestBuiltinDenyList(t *testing.T) {
	requireSeccompNotify(t)
	dir := fakeProgram(t, "reboot")
	env := []string{"PATH=" + filepath.Join(dir, "bin") + ":" + os.Getenv("PATH")}
	r := runCordon(t, runOpts{dir: dir, env: env}, "--", "sh", "-c", "reboot now; echo rc=$?")
	assert.NotContains(t, r.stdout, "reboot ran")
	assert.Contains(t, r.stdout, "rc=126")
	assert.Contains(t, r.stderr, `cordon: denied: reboot now (rule: deny "{shutdown,reboot,halt,poweroff}": powers off or restarts the machine)`)

	r = runCordon(t, runOpts{dir: dir, env: env}, "--no-defaults", "--", "sh", "-c", "reboot now")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "reboot ran: now")
}

func TestAuditLog(t *testing.T) {
	requireSeccompNotify(t)
	dir := fakeProgram(t, "git")
	env := []string{"PATH=" + filepath.Join(dir, "bin") + ":" + os.Getenv("PATH")}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := runCordon(t, runOpts{dir: dir, env: env}, "--audit", audit, "--deny", "git push", "--", "sh", "-c", "git status; git push")
	require.Equal(t, 126, r.code, r.stderr)
	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	// Exec decisions are "kind":"exec" lines; what the files policy did
	// at start comes first, as "kind":"file" lines (TestFilesAudit).
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, `{"kind":"exec",`) {
			lines = append(lines, l)
		} else {
			assert.True(t, strings.HasPrefix(l, `{"kind":"file",`), l)
		}
	}
	require.GreaterOrEqual(t, len(lines), 3, string(b))
	assert.Contains(t, lines[0], `"argv":["sh","-c","git status; git push"]`)
	assert.Contains(t, lines[0], `"decision":"allow"`)
	assert.Contains(t, string(b), `"argv":["git","status"],"decision":"allow"`)
	assert.Contains(t, string(b), `"argv":["git","push"],"decision":"deny","rule":"deny \"git push\"","rule_id":"--deny"`)
	assert.Contains(t, lines[0], `"ppid":`)
	assert.Contains(t, lines[0], `"cwd":"`+dir+`"`)
	for _, l := range lines {
		assert.Contains(t, l, `"latency_us":`)
		assert.Contains(t, l, `"pid":`)
	}
}

func TestIsolationNone(t *testing.T) {
	requireSeccompNotify(t)
	dir := fakeProgram(t, "git")
	env := []string{"PATH=" + filepath.Join(dir, "bin") + ":" + os.Getenv("PATH")}
	r := runCordon(t, runOpts{dir: dir, env: env}, "--isolation", "none", "--deny", "git push", "--",
		"sh", "-c", "git push; sleep 300.417 & echo started-bg")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: --isolation none")
	assert.Contains(t, r.stderr, "cordon: denied: git push")
	assert.Contains(t, r.stdout, "started-bg")
	// Without a pid namespace the init kills what the command left behind.
	requireNoLeftovers(t)
	assertNoProcess(t, "sleep 300.417")
}

// TestIsolationNoneRefusesFilesRules: without a sandbox nothing can be
// hidden or made read-only, so files rules asked for in a policy file fail
// the start (125), as the flags do, instead of being dropped; a policy file
// with exec rules only still runs.
func TestIsolationNoneRefusesFilesRules(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	withFiles := filepath.Join(dir, "files.yaml")
	require.NoError(t, os.WriteFile(withFiles, []byte("files:\n  deny_read: [secret.txt]\n"), 0o644))
	r := runCordon(t, runOpts{dir: dir}, "--isolation", "none", "--policy", withFiles, "--", "true")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "need --isolation bwrap or landlock")
	r = runCordon(t, runOpts{dir: dir}, "--isolation", "none", "--deny-read", "secret.txt", "--", "true")
	assert.Equal(t, 125, r.code, r.stderr)

	rulesOnly := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(rulesOnly, []byte("rules:\n  - deny: git push\n"), 0o644))
	r = runCordon(t, runOpts{dir: dir}, "--isolation", "none", "--policy", rulesOnly, "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
}

func TestSandboxView(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	ro := t.TempDir()
	rw := t.TempDir()
	marker, err := os.CreateTemp("", "cordon-host-marker-")
	require.NoError(t, err)
	marker.Close()
	defer os.Remove(marker.Name())
	script := strings.Join([]string{
		`touch ./in-cwd && echo cwd-writable`,
		`touch /usr/x 2>/dev/null || echo root-readonly`,
		`test -e ` + marker.Name() + ` || echo tmp-private`,
		`grep -qa bwrap /proc/1/cmdline && echo own-pid-namespace`,
		`touch ` + ro + `/x 2>/dev/null || echo ro-bind-readonly`,
		`touch ` + rw + `/x && echo rw-bind-writable`,
	}, "; ")
	r := runCordon(t, runOpts{dir: dir}, "--ro", ro, "--rw", rw, "--", "sh", "-c", script)
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"cwd-writable", "root-readonly", "tmp-private", "own-pid-namespace", "ro-bind-readonly", "rw-bind-writable"} {
		assert.Contains(t, r.stdout, want)
	}
	assert.FileExists(t, filepath.Join(dir, "in-cwd"))
	assert.FileExists(t, filepath.Join(rw, "x"))
}

func TestNetNone(t *testing.T) {
	requireSeccompNotify(t)
	// /proc/net/dev lists the interfaces of the reader's network namespace.
	r := cordon(t, "--net", "none", "--", "sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "lo", strings.TrimSpace(r.stdout))
	host := cordon(t, "--", "sh", "-c", "tail -n +3 /proc/net/dev | wc -l")
	assert.NotEqual(t, "1", strings.TrimSpace(host.stdout), "the default shares the host's network")
}

// TestAuditLinesAfterAnswer: an allowed exec is answered before its audit
// line is written (off the caller's wait), so the line is written while the
// exec runs. Every exec still has its line, the last one too (the command
// exits right after it, and so does the sandbox), and the caller facts the
// line reads from /proc after the answer are the caller's: its parent is
// the shell that ran it, its directory the one it ran in.
func TestAuditLinesAfterAnswer(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	const n = 50
	r := runCordon(t, runOpts{dir: dir}, "--audit", audit, "--", "bash", "-c",
		fmt.Sprintf("cd sub; for i in $(seq %d); do /bin/true; done; exec /bin/echo last", n))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "last")
	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	type line struct {
		Kind, Cwd, Decision string
		Pid, Ppid           int
		Argv                []string
		LatencyUs           *int64 `json:"latency_us"`
	}
	var execs []line
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec line
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		if rec.Kind == "exec" {
			execs = append(execs, rec)
		}
	}
	require.NotEmpty(t, execs)
	shell := execs[0]
	require.Equal(t, "bash", shell.Argv[0], string(b))
	trues := 0
	for _, e := range execs[1:] {
		assert.Equal(t, "allow", e.Decision)
		assert.NotNil(t, e.LatencyUs, "latency_us")
		switch e.Argv[0] {
		case "/bin/true":
			trues++
			assert.Equal(t, shell.Pid, e.Ppid, "the parent of /bin/true is the shell")
			assert.Equal(t, sub, e.Cwd)
		case "/bin/echo":
			// exec'd in place of the shell: its own pid, the shell's parent.
			assert.Equal(t, shell.Pid, e.Pid)
			assert.Equal(t, shell.Ppid, e.Ppid)
			assert.Equal(t, sub, e.Cwd)
		}
	}
	assert.Equal(t, n, trues, "one line per /bin/true")
	assert.Equal(t, []string{"/bin/echo", "last"}, execs[len(execs)-1].Argv, "the last exec, right before the exit, has its line")
}

// fakeProgramVouched is fakeProgram's bin directory where the sandbox sees it
// read-only (under /var/tmp, outside the working directory): a program there
// is one the sandbox could not have put on its PATH itself, so allow rules
// naming it apply (README: programs by identity). It returns the directory
// to put on PATH.
func fakeProgramVouched(t *testing.T, name string) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "cordon-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	bin := filepath.Join(base, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	writeScript(t, bin, name, `echo "`+name+` ran: $*"`)
	return bin
}
