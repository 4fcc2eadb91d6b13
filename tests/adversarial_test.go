package tests

// Adversarial tests (issue 4, item 6): a workload that tries to run a denied
// program or argv through the exec family, through the real binary. Helper
// programs live in testdata/adversarial and are built at test time; they
// report what happened on stdout. The i386/x32 entries are in arch_test.go,
// huge argv and the 32-loop exec storm in stress_test.go.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// assertRaceOutcome checks one flip summary from a race where the racer
// alternates between an allowed and a denied value.
func assertRaceOutcome(t *testing.T, r result, race map[string]int, n int, deniedMark string) {
	t.Helper()
	// The defence under test. Against a plain notify supervisor (check, then
	// CONTINUE) the kernel reads the value again after the check and the
	// racer wins in up to ~20% of the attempts on this 2-core machine (fewer
	// when it is busy): this fails with ran_denied > 0 and the denied
	// program's output on stdout.
	assert.Zero(t, race["ran_denied"], "the denied value ran after an allowed check in %d of %d attempts",
		race["ran_denied"], n)
	assert.Zero(t, strings.Count(r.stdout, deniedMark), "lines showing the denied program ran (%q)", deniedMark)
	// Closing the race must not close the door: an attempt whose value was
	// allowed at the check and at the exec still runs. Fails if the
	// supervisor refuses or kills every exec that could be raced.
	assert.GreaterOrEqual(t, race["ran_allowed"], n/20, "allowed execs must keep working while a racer runs")
	assert.Zero(t, race["other"], "unexpected outcomes:\n%s", tail(r.stdout, 2000))
	// An attempt caught at verification is SIGKILLed and reported with the
	// reason. (There may be none if the racer never won the window.)
	changed := strings.Count(r.stderr, "changed after check")
	if race["killed"] > 0 {
		assert.GreaterOrEqual(t, changed, race["killed"], "every exec killed at verification is reported with the reason")
	}
}

// logRace logs a race's counts.
func logRace(t *testing.T, what string, c map[string]int, stderr string) {
	t.Helper()
	t.Logf("%s: n=%d ran_allowed=%d ran_denied=%d ran_torn=%d eperm(denied at check)=%d killed(at verification)=%d other=%d racer_refused=%d; %d \"changed after check\" lines",
		what, c["n"], c["ran_allowed"], c["ran_denied"], c["ran_torn"], c["eperm"], c["killed"], c["other"],
		c["racer_refused"], strings.Count(stderr, "changed after check"))
}

// TestAdvArgvRace races the exec check from every kind of task that can write
// the exec'ing process's argv: the check sees "git status", and the racer
// tries to make the kernel run "git push" under --deny "git push".
func TestAdvArgvRace(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	flip := buildC(t, dir, "flip.c", "flip")
	git := fakeBin(t, dir, "git")
	const n, controls = 500, 100
	tests := []struct {
		name, mode string
		// mayRefuse: the supervisor may refuse every exec of such a
		// caller (a process traced by someone else cannot be verified with
		// ptrace; strict mode refuses it), so only the safety property is
		// checked.
		mayRefuse bool
		// peerRefused: the filter refuses to create the racer at all
		// (clone with CLONE_VM outside threads and plain vfork), so every
		// attempt must report racer_refused and nothing denied may run.
		peerRefused bool
	}{
		{"second thread", "thread", false, false},
		{"CLONE_VM peer", "clonevm", false, true},
		{"MAP_SHARED memfd written by another process", "shared", false, false},
		{"/proc/PID/mem writer", "procmem", false, false},
		{"/proc/PID/mem writer that is the caller's tracer", "tracedmem", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			race := fmt.Sprintf("%s -m %s -n %d -p %s", shq(flip), tc.mode, n, shq(git))
			script := race
			if tc.peerRefused {
				r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--deny", "git push", "--", "sh", "-c", script)
				require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", tail(r.stdout, 2000), tail(r.stderr, 2000))
				counts := parseSummary(t, r.stdout, "summary mode="+tc.mode+" steady=0 ")
				logRace(t, "race", counts, r.stderr)
				assert.Equal(t, n, counts["racer_refused"], "the filter refuses every CLONE_VM peer")
				assert.Zero(t, counts["ran_denied"])
				assert.Zero(t, strings.Count(r.stdout, "git ran: push"))
				return
			}
			if !tc.mayRefuse {
				// The control runs the same racer writing "status" only.
				script = fmt.Sprintf("%s -m %s -n %d -p %s -s && %s", shq(flip), tc.mode, controls, shq(git), race)
			}
			r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--deny", "git push", "--", "sh", "-c", script)
			require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", tail(r.stdout, 2000), tail(r.stderr, 2000))
			counts := parseSummary(t, r.stdout, "summary mode="+tc.mode+" steady=0 ")
			logRace(t, "race", counts, r.stderr)
			if tc.mayRefuse {
				assert.Zero(t, counts["ran_denied"], "the denied value ran after an allowed check in %d of %d attempts",
					counts["ran_denied"], n)
				assert.Zero(t, strings.Count(r.stdout, "git ran: push"), "lines showing git push ran")
				return
			}
			control := parseSummary(t, r.stdout, "summary mode="+tc.mode+" steady=1 ")
			logRace(t, "control", control, "")
			// A racer that writes but never changes the value must not cost
			// one exec: fails if execs from multithreaded callers, CLONE_VM
			// peers, shared mappings or traced memory are refused or killed.
			assert.Equal(t, controls, control["ran_allowed"], "every exec runs when the value does not change")
			assertRaceOutcome(t, r, counts, n, "git ran: push")
		})
	}
	requireNoOwnLeftovers(t)
}

// TestAdvRacePostExecArgvRewrite rewrites argv in the new program's memory
// right after the exec, before its main reads it: a sibling process waits
// until the caller runs the new image and no tracer holds it stopped (so a
// verification at PTRACE_EVENT_EXEC is over), then writes "push" over
// argv[1] through /proc/PID/mem. The exec was allowed as "git status"; git
// then runs as "git push".
func TestAdvRacePostExecArgvRewrite(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	flip := buildC(t, dir, "flip.c", "flip")
	git := fakeBin(t, dir, "git")
	const n = 300
	r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--deny", "git push", "--",
		flip, "-m", "postexec", "-n", fmt.Sprint(n), "-p", git)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", tail(r.stdout, 2000), tail(r.stderr, 2000))
	counts := parseSummary(t, r.stdout, "summary mode=postexec steady=0 ")
	logRace(t, "post-exec rewrite", counts, r.stderr)
	// Fails while processes in the sandbox can write each other's memory
	// (/proc/PID/mem, process_vm_writev, ptrace POKEDATA): checking argv at
	// the exec cannot see a write that lands after it.
	assertRaceOutcome(t, r, counts, n, "git ran: push")
	requireNoOwnLeftovers(t)
}

// TestAdvPathSwapRace swaps what the exec'd path names between the check and
// the exec: two symlinks exchanged atomically (renameat2 RENAME_EXCHANGE),
// one naming an allowed program and one a denied one — binaries, and
// scripts whose interpreters are allowed and denied.
func TestAdvPathSwapRace(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	flip := buildC(t, dir, "flip.c", "flip")
	okProg := fakeBin(t, dir, "ok-prog")
	deniedProg := fakeBin(t, dir, "denied-prog")
	okScript := filepath.Join(dir, "ok-script")
	deniedScript := filepath.Join(dir, "denied-script")
	require.NoError(t, os.WriteFile(okScript, []byte("#!"+okProg+"\n"), 0o755))
	require.NoError(t, os.WriteFile(deniedScript, []byte("#!"+deniedProg+"\n"), 0o755))
	const n, controls = 500, 100
	tests := []struct {
		name            string
		allowed, denied string
	}{
		{"binaries", okProg, deniedProg},
		{"scripts with allowed and denied interpreters", okScript, deniedScript},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Inside the sandbox's cwd, the only host directory bound
			// writable (its /tmp is private).
			work, err := os.MkdirTemp(dir, "swap-")
			require.NoError(t, err)
			for _, d := range []string{"control", "race"} {
				require.NoError(t, os.Mkdir(filepath.Join(work, d), 0o755))
				require.NoError(t, os.Symlink(tc.allowed, filepath.Join(work, d, "tool")))
			}
			// The control swaps two links that both name the allowed program.
			require.NoError(t, os.Symlink(tc.allowed, filepath.Join(work, "control", "tool.alt")))
			require.NoError(t, os.Symlink(tc.denied, filepath.Join(work, "race", "tool.alt")))
			run := fmt.Sprintf("%s -m pathswap -p ./tool -x ./tool.alt -A 'ok-prog ran:' -D 'denied-prog ran:'", shq(flip))
			script := fmt.Sprintf("cd %[4]s/control && %[1]s -s -n %[2]d && cd ../race && %[1]s -n %[3]d", run, controls, n, shq(work))
			r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--deny", "denied-prog", "--", "sh", "-c", script)
			require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", tail(r.stdout, 2000), tail(r.stderr, 2000))
			control := parseSummary(t, r.stdout, "summary mode=pathswap steady=1 ")
			race := parseSummary(t, r.stdout, "summary mode=pathswap steady=0 ")
			logRace(t, "control", control, "")
			logRace(t, "race", race, r.stderr)
			assert.Equal(t, controls, control["ran_allowed"], "a path that keeps naming the allowed program always runs")
			assertRaceOutcome(t, r, race, n, "denied-prog ran:")
		})
	}
	requireNoOwnLeftovers(t)
}

// TestAdvRaceKilledMidExec kills execs while the supervisor is deciding them
// (a big argv makes the decision take milliseconds; the SIGKILL lands at a
// random moment) and kills whole thread races mid-run. The supervisor must
// carry on: a later exec in the same run is still decided, both ways.
func TestAdvRaceKilledMidExec(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	flip := buildC(t, dir, "flip.c", "flip")
	git := fakeBin(t, dir, "git")
	script := fmt.Sprintf("%[1]s -m killpend -n 40 -p %[2]s; %[2]s status; echo allowed-rc=$?; %[2]s push; echo denied-rc=$?",
		shq(flip), shq(git))
	// If the supervisor wedged on a caller that died under it (blocked on a
	// dead pid, or waiting for an exec event that never comes), the execs
	// after the kills would hang and runCordon fails at its timeout.
	r := runCordon(t, runOpts{dir: dir, timeout: 30 * time.Second}, "--deny", "git push", "--", "sh", "-c", script)
	assert.Equal(t, 0, r.code, "stderr: %s", tail(r.stderr, 2000))
	c := parseSummary(t, r.stdout, "summary mode=killpend ")
	t.Logf("killpend: %d big-argv execs killed mid-flight, %d finished first; %d thread races killed", c["killed"], c["finished"], c["races_killed"])
	assert.Equal(t, 40, c["killed"]+c["finished"])
	assert.Positive(t, c["killed"], "some execs must be killed while pending for the test to mean anything")
	assert.Equal(t, 5, c["races_killed"])
	assert.Contains(t, r.stdout, "git ran: status\nallowed-rc=0\n")
	assert.Contains(t, r.stdout, "denied-rc=126\n")
	assert.NotContains(t, r.stdout, "git ran: push")
	assert.Contains(t, r.stderr, `cordon: denied: `+git+` push (rule: deny "git push")`)
	requireNoOwnLeftovers(t)
}

// TestAdvShebangInterpreter runs #! scripts directly: the kernel runs the
// interpreter named on the first line without a second exec call, so the
// supervisor must decide the interpreter line + script + args, not only the
// script's own name.
func TestAdvShebangInterpreter(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	okProg := fakeBin(t, bin, "ok-prog")
	deniedProg := fakeBin(t, bin, "denied-prog")
	b, err := os.ReadFile(deniedProg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "copy-of-denied"), b, 0o755))
	require.NoError(t, os.Symlink(deniedProg, filepath.Join(dir, "link-to-denied")))
	// inner is itself a script: the kernel follows #! chains (up to 4 deep).
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inner"), []byte("#!"+deniedProg+"\n"), 0o755))

	tests := []struct {
		name    string
		shebang string
		rule    string
		ran     string // output when the interpreter ran; "" when it must be denied
	}{
		{"denied interpreter", "#!" + deniedProg, "denied-prog", ""},
		{"allowed interpreter", "#!" + okProg, "denied-prog", "ok-prog ran: ./script a b"},
		{"denied interpreter argument", "#!" + okProg + " -evil", "ok-prog -evil", ""},
		{"other interpreter argument", "#!" + okProg + " -evil", "ok-prog -other", "ok-prog ran: -evil ./script a b"},
		{"interpreter is a script with a denied interpreter", "#!" + filepath.Join(dir, "inner"), "denied-prog", ""},
		{"relative interpreter path", "#!bin/denied-prog", "denied-prog", ""},
		{"interpreter through a symlink", "#!" + filepath.Join(dir, "link-to-denied"), "denied-prog", ""},
		{"renamed copy of a denied interpreter", "#!" + filepath.Join(dir, "copy-of-denied"), "denied-prog", ""},
		// env runs the program in an exec of its own: denied the usual way.
		{"env then a denied program", "#!/usr/bin/env denied-prog", "denied-prog", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// If the exec failed with ENOEXEC, sh would run the file itself
			// and print the body's marker.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "script"), []byte(tc.shebang+"\necho body-ran-by-sh\n"), 0o755))
			r := runCordon(t, runOpts{dir: dir, env: []string{pathWith(bin)}}, "--deny", tc.rule, "--",
				"sh", "-c", "./script a b; echo rc=$?")
			assert.NotContains(t, r.stdout, "body-ran-by-sh")
			if tc.ran != "" {
				assert.Equal(t, tc.ran+"\nrc=0\n", r.stdout, "stderr: %s", r.stderr)
				assert.NotContains(t, r.stderr, "cordon: denied")
				return
			}
			// Without the interpreter decided, the denied interpreter runs
			// and prints "... ran: ./script a b" with rc=0.
			assert.NotContains(t, r.stdout, " ran:", "the denied interpreter must not start")
			assert.Contains(t, r.stdout, "rc=126\n", "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, "cordon: denied:")
			assert.Contains(t, strings.ToLower(r.stderr), "operation not permitted")
		})
	}
}

// TestAdvMemfdExec runs copies of a denied binary (/usr/bin/ls under --deny
// ls) through file descriptors: fexecve of a memfd, the memfd through
// /proc/self/fd/N, an unlinked copy, and an O_PATH fd of the original. Each
// must be decided by what it is; the same doors with an allowed binary
// (/usr/bin/echo) must work.
func TestAdvMemfdExec(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	execat := buildC(t, dir, "execat.c", "execat")
	listed := filepath.Join(dir, "listed")
	require.NoError(t, os.Mkdir(listed, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(listed, "marker-file"), nil, 0o644))
	// An unsealed memfd never runs, whatever it holds: a writable mapping
	// could rewrite it while it runs (exec gives no ETXTBSY for a memfd);
	// nor one sealed against writes only (truncated to zero and back, the
	// running program becomes zeros).
	for _, mode := range []string{"unsealed", "writesealed"} {
		r := runCordon(t, runOpts{dir: dir}, "--deny", "ls", "--", execat, mode, "/usr/bin/echo", "x", "fd-exec-ran")
		assert.Equal(t, 126, r.code, "%s: stdout: %s\nstderr: %s", mode, r.stdout, r.stderr)
		assert.NotContains(t, r.stdout, "fd-exec-ran", mode)
		assert.Contains(t, r.stderr, "runs only when sealed against writes and shrinking", mode)
	}
	for _, mode := range []string{"memfd", "procfd", "unlinked", "opath"} {
		t.Run(mode, func(t *testing.T) {
			r := runCordon(t, runOpts{dir: dir}, "--deny", "ls", "--", execat, mode, "/usr/bin/ls", "x", listed)
			// Without identity for fd-backed executables this either lists
			// the directory (the copy ran) or fails with an errno that is
			// not a policy denial (ENOENT for a path that only exists as an fd).
			assert.NotContains(t, r.stdout, "marker-file", "the denied program must not run")
			assert.Equal(t, 126, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, "Operation not permitted")
			assert.Contains(t, r.stderr, "cordon: denied:")

			r = runCordon(t, runOpts{dir: dir}, "--deny", "ls", "--", execat, mode, "/usr/bin/echo", "x", "fd-exec-ran")
			assert.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Equal(t, "fd-exec-ran\n", r.stdout, "an allowed program run from an fd is not refused blindly")
			assert.NotContains(t, r.stderr, "cordon: denied")
		})
	}
}

// TestAdvExecveatDirfd runs ls with execveat relative to a directory fd: the
// file is the one the kernel finds from that fd, not from the caller's cwd.
func TestAdvExecveatDirfd(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	execat := buildC(t, dir, "execat.c", "execat")
	listed := filepath.Join(dir, "listed")
	require.NoError(t, os.Mkdir(listed, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(listed, "marker-file"), nil, 0o644))
	copies := filepath.Join(dir, "copies")
	require.NoError(t, os.Mkdir(copies, 0o755))
	b, err := os.ReadFile("/usr/bin/ls")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(copies, "lister"), b, 0o755))
	// A harmless "lister" in the caller's cwd: resolving the name from the
	// cwd instead of the dirfd would judge (and allow) the wrong file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lister"), []byte("#!/bin/sh\necho cwd-lister\n"), 0o755))

	tests := []struct {
		name       string
		dirfd, rel string
	}{
		{"name in the directory", "/usr/bin", "ls"},
		{"dot-dot from another directory", "/usr/share", "../bin/ls"},
		{"renamed copy", copies, "lister"},
		{"absolute path ignores the dirfd", "/tmp", "/usr/bin/ls"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Fails if the dirfd were ignored (the cwd's harmless lister is
			// judged) or the copy not recognised: the listing appears.
			r := runCordon(t, runOpts{dir: dir}, "--deny", "ls", "--", execat, "dirfd", tc.dirfd, tc.rel, "ls", listed)
			assert.NotContains(t, r.stdout, "marker-file", "the denied program must not run")
			assert.Equal(t, 126, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, "execat: execveat: Operation not permitted")
			assert.Contains(t, r.stderr, "cordon: denied:")

			r = runCordon(t, runOpts{dir: dir}, "--deny", "cat", "--", execat, "dirfd", tc.dirfd, tc.rel, "ls", listed)
			assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			assert.Equal(t, "marker-file\n", r.stdout)
		})
	}
}

// TestAdvLoaderRunsRenamedCopy starts a denied program through the dynamic
// loader, which opens the program itself: the exec the supervisor sees is
// the loader's.
func TestAdvLoaderRunsRenamedCopy(t *testing.T) {
	requireSeccompNotify(t)
	const loader = "/lib64/ld-linux-x86-64.so.2"
	if _, err := os.Stat(loader); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", loader)
	}
	dir := t.TempDir()
	listed := filepath.Join(dir, "listed")
	require.NoError(t, os.Mkdir(listed, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(listed, "marker-file"), nil, 0o644))
	for src, dst := range map[string]string{"/usr/bin/ls": "renamed", loader: "my-loader"} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, dst), b, 0o755))
	}
	tests := []struct {
		name, cmd string
	}{
		{"loader runs ls", loader + " /usr/bin/ls listed"},
		{"loader runs a renamed copy", loader + " ./renamed listed"},
		{"loader options before the program", loader + " --inhibit-cache --argv0 harmless ./renamed listed"},
		{"renamed copy of the loader runs a renamed copy", "./my-loader ./renamed listed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Judged by the loader's own name, "ld-linux-x86-64.so.2" or
			// "my-loader", these would be allowed and list the directory.
			r := runCordon(t, runOpts{dir: dir}, "--deny", "ls", "--", "sh", "-c", tc.cmd+"; echo rc=$?")
			assert.NotContains(t, r.stdout, "marker-file", "the denied program must not run")
			assert.Contains(t, r.stdout, "rc=126\n", "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, "cordon: denied:")
		})
	}
	r := runCordon(t, runOpts{dir: dir}, "--deny", "ls", "--", "sh", "-c", loader+" /usr/bin/echo loader-echo; ./my-loader /usr/bin/echo copy-echo")
	if os.Getenv(tierEnv) == "landlock" && !readOnlyMount(t, "/usr/bin/echo") {
		// Without bubblewrap's read-only binds the host's root is a
		// writable mount: the loader rule cannot prove the program stays
		// what was checked, and refuses it (README: the landlock tier).
		assert.Contains(t, r.stderr, "cordon: denied: "+loader+" /usr/bin/echo loader-echo")
		assert.Empty(t, r.stdout)
		return
	}
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "loader-echo\ncopy-echo\n", r.stdout, "an allowed program through the loader runs")
}

// TestAdvThreadedC execs from a C program with threads running: a storm from
// 8 threads at once (fork+execve and posix_spawn, i.e. vfork parents), and
// an exec made by a thread that is not the thread-group leader.
func TestAdvThreadedC(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	threads := buildC(t, dir, "threads.c", "threads")
	okProg := fakeBin(t, dir, "ok-prog")
	deniedProg := fakeBin(t, dir, "denied-prog")

	t.Run("storm from 8 threads", func(t *testing.T) {
		r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--deny", "denied-prog", "--",
			threads, "storm", "8", "50", okProg, deniedProg)
		require.Equal(t, 0, r.code, r.stderr)
		// Fails if execs from a multithreaded process are refused (fence's
		// answer to the race) or a decision is lost or mixed up.
		assert.Contains(t, r.stdout, "storm ok=400 failed=0 refused=80 denied_ran=0\n")
		assert.NotContains(t, r.stdout, "denied-prog ran")
		assert.Equal(t, 80, strings.Count(r.stderr, "cordon: denied:"), "one line per denied exec")
	})
	t.Run("non-leader thread execs an allowed program", func(t *testing.T) {
		r := runCordon(t, runOpts{dir: dir}, "--deny", "denied-prog", "--", threads, "exec", okProg, "a", "b")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "ok-prog ran: a b\n", r.stdout)
	})
	t.Run("non-leader thread execs a denied program", func(t *testing.T) {
		r := runCordon(t, runOpts{dir: dir}, "--deny", "denied-prog", "--", threads, "exec", deniedProg, "a", "b")
		assert.Equal(t, 126, r.code, r.stderr)
		assert.Equal(t, "thread exec: Operation not permitted\n", r.stdout)
		assert.Contains(t, r.stderr, `cordon: denied: `+deniedProg+` a b (rule: deny "denied-prog")`)
	})
}

// TestAdvThreadedPython: threaded Python keeps exec'ing allowed programs; a
// denied one raises PermissionError (or exits 126 through a shell).
func TestAdvThreadedPython(t *testing.T) {
	requireSeccompNotify(t)
	python := requireTool(t, "python3")
	dir := t.TempDir()
	git := fakeBin(t, dir, "git")
	// The checkout may be hidden in the sandbox (a clone under /tmp): run
	// a copy from the working directory, which is always bound.
	prog := filepath.Join(dir, "threaded.py")
	copyFile(t, filepath.Join(advSrc, "threaded.py"), prog, 0o644)

	r := runCordon(t, runOpts{dir: dir}, "--deny", "git push", "--", python, prog, git, "subprocess")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "allowed ok=10/10\ndenied refused=10/10\nfrom a thread: allowed=True refused=True\nshell rc=126\n", r.stdout)
	assert.NotContains(t, r.stdout, "git ran: push")

	// os.execv from a thread that is not the leader.
	r = runCordon(t, runOpts{dir: dir}, "--deny", "git push", "--", python, prog, git, "execv-status")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "git ran: status\n", r.stdout)
	r = runCordon(t, runOpts{dir: dir}, "--deny", "git push", "--", python, prog, git, "execv-push")
	assert.Equal(t, 126, r.code, r.stderr)
	assert.Equal(t, "thread execv: PermissionError\n", r.stdout)
}

// TestAdvThreadedNode: node (a worker thread spinning, a timer running) runs
// allowed programs; a denied one fails with EPERM.
func TestAdvThreadedNode(t *testing.T) {
	requireSeccompNotify(t)
	node := requireTool(t, "node")
	dir := t.TempDir()
	git := fakeBin(t, dir, "git")
	// The checkout may be hidden in the sandbox (a clone under /tmp): run
	// a copy from the working directory, which is always bound.
	prog := filepath.Join(dir, "threaded.js")
	copyFile(t, filepath.Join(advSrc, "threaded.js"), prog, 0o644)
	r := runCordon(t, runOpts{dir: dir}, "--deny", "git push", "--", node, prog, git)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "allowed ok=10/10\ndenied refused=10/10\nasync allowed: git ran: status\nasync denied: EPERM\ntimer ticked=true\n", r.stdout)
	assert.Equal(t, 11, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
}

// TestAdvThreadedGo: a Go program with goroutines spinning on several OS
// threads; os/exec forks with CLONE_VFORK|CLONE_VM, so the child shares
// memory with running threads.
func TestAdvThreadedGo(t *testing.T) {
	requireSeccompNotify(t)
	goTool := requireTool(t, "go")
	dir := t.TempDir()
	git := fakeBin(t, dir, "git")
	prog := filepath.Join(dir, "threaded")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", prog, filepath.Join(advSrc, "threaded.go")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--deny", "git push", "--", prog, git, "command")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "allowed ok=10/10\ndenied refused=10/10\nconcurrent allowed ok=40/40 refused=40/40\n", r.stdout)
	assert.Equal(t, 50, strings.Count(r.stderr, "cordon: denied:"))

	// syscall.Exec from a goroutine on a thread that is not the leader.
	r = runCordon(t, runOpts{dir: dir}, "--deny", "git push", "--", prog, git, "exec-status")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "git ran: status\n", r.stdout)
	r = runCordon(t, runOpts{dir: dir}, "--deny", "git push", "--", prog, git, "exec-push")
	assert.Equal(t, 126, r.code, r.stderr)
	assert.Equal(t, "goroutine exec: operation not permitted\n", r.stdout)
}
