package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// These tests drive Run end to end: the test binary plays the sandbox's
// init (TestMain dispatches InitArg), so the filter, the control protocol,
// the supervisor and the launcher all run for real.

type runOutcome struct {
	res            Result
	err            error
	stdout, stderr string
	took           time.Duration
}

// runCordon runs argv under a policy that denies "false", with a 30s bound;
// tweak, when set, adjusts the options first.
func runCordon(t *testing.T, iso Isolation, tweak func(*Options), argv ...string) runOutcome {
	t.Helper()
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Rules:   []policy.Rule{{Decision: policy.Deny, Pattern: "false", Source: "test"}},
	})
	require.NoError(t, err)
	dir := t.TempDir()
	devnull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devnull.Close()
	stdout, err := os.Create(filepath.Join(dir, ".stdout"))
	require.NoError(t, err)
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, ".stderr"))
	require.NoError(t, err)
	defer stderr.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan runOutcome, 1)
	o := Options{
		Argv: argv, Env: []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}, Dir: dir,
		Policy: pol, Isolation: iso,
		Stdin: devnull, Stdout: stdout, Stderr: stderr,
	}
	if tweak != nil {
		tweak(&o)
	}
	go func() {
		res, err := Run(ctx, o)
		done <- runOutcome{res: res, err: err}
	}()
	var res runOutcome
	select {
	case res = <-done:
	case <-time.After(40 * time.Second):
		t.Fatal("Run did not return within 40s")
	}
	out, _ := os.ReadFile(stdout.Name())
	errOut, _ := os.ReadFile(stderr.Name())
	res.stdout, res.stderr = string(out), string(errOut)
	return res
}

func TestRun(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	for _, iso := range []Isolation{IsolationNone, IsolationBwrap} {
		t.Run(string(iso), func(t *testing.T) {
			if iso == IsolationBwrap {
				testcap.RequireBwrap(t)
			}
			tests := []struct {
				name  string
				argv  []string
				opts  func(*Options)
				check func(t *testing.T, o runOutcome)
				// leaks lists descriptors Run may leave open by design.
				leaks []string
			}{
				{
					name: "exit code",
					argv: []string{"sh", "-c", "echo hello; exit 3"},
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.Equal(t, 3, o.res.ExitCode)
						assert.Equal(t, "hello\n", o.stdout)
					},
				},
				{
					name: "killed by a signal",
					argv: []string{"sh", "-c", "kill -TERM $$"},
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.Equal(t, 128+int(unix.SIGTERM), o.res.ExitCode)
						assert.Equal(t, unix.SIGTERM, o.res.Signal)
					},
				},
				{
					name: "nested exec denied",
					argv: []string{"sh", "-c", `/bin/false x; echo "rc=$?"`},
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.Equal(t, 0, o.res.ExitCode)
						assert.NotEqual(t, "rc=0\n", o.stdout, "the denied exec must fail")
						assert.Contains(t, o.stderr, `cordon: denied: /bin/false x (rule: deny "false")`)
					},
				},
				{
					// checkTarget looks in the caller's root: a file that
					// exists only in the sandbox's private /tmp is runnable.
					name: "program created inside the sandbox runs",
					argv: []string{"sh", "-c", "cp /bin/true /tmp/t-$$ && /tmp/t-$$ && echo ok"},
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.Equal(t, "ok\n", o.stdout)
					},
				},
				{
					// A relative path is resolved against the caller's cwd
					// before the policy sees it.
					name: "relative path decided by the program it names",
					argv: []string{"sh", "-c", `cp /bin/false ./false && ./false; echo "rc=$?"`},
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.NotEqual(t, "rc=1\n", o.stdout, "./false ran: it was not denied")
						assert.Contains(t, o.stderr, `cordon: denied: ./false (rule: deny "false")`)
					},
				},
				{
					name: "top-level command denied",
					argv: []string{"false"},
					check: func(t *testing.T, o runOutcome) {
						var ee *ExecError
						require.ErrorAs(t, o.err, &ee)
						assert.True(t, ee.Denied)
						assert.Equal(t, 126, ee.ExitCode())
						assert.Contains(t, o.stderr, `cordon: denied: false (rule: deny "false")`)
					},
				},
				{
					name: "command not found",
					argv: []string{"cordon-no-such-command"},
					check: func(t *testing.T, o runOutcome) {
						var ee *ExecError
						require.ErrorAs(t, o.err, &ee)
						assert.Equal(t, "cordon-no-such-command: command not found", ee.Error())
						assert.Equal(t, 127, ee.ExitCode())
						assert.False(t, errors.Is(o.err, ErrSetup))
					},
				},
				{
					// setsid takes sleep out of the command's process group,
					// so killing the group does not reach it; its argument
					// makes it findable from the host whatever pid namespace
					// it ran in.
					name: "background processes do not outlive the command",
					// The shell waits until sleep runs, so the run cannot end
					// (and fail sleep's exec) before.
					argv: []string{"sh", "-c", "setsid sleep 1000.0" + strconv.Itoa(os.Getpid()) + ` </dev/null >/dev/null 2>&1 & p=$!
						until [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ]; do sleep 0.01; done; echo started`},
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.Equal(t, "started\n", o.stdout)
						marker := "sleep\x001000.0" + strconv.Itoa(os.Getpid())
						deadline := time.Now().Add(2 * time.Second)
						for {
							left := processesWith(marker)
							if len(left) == 0 {
								return
							}
							if time.Now().After(deadline) {
								for _, p := range left {
									_ = unix.Kill(p, unix.SIGKILL)
								}
								t.Fatalf("background sleep %v survived the run", left)
							}
							time.Sleep(20 * time.Millisecond)
						}
					},
				},
				{
					name: "arguments reach the command byte for byte",
					argv: []string{"printf", "%s|", "caf\xe9", "\xff\xfe", "two words", ""},
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.Equal(t, 0, o.res.ExitCode)
						assert.Equal(t, "caf\xe9|\xff\xfe|two words||", o.stdout)
					},
				},
				{
					name: "timeout ends the command with SIGTERM",
					argv: []string{"sleep", "1000"},
					opts: func(o *Options) { o.Timeout, o.KillGrace = 200*time.Millisecond, 10*time.Second },
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.True(t, o.res.TimedOut)
						assert.Equal(t, 124, o.res.ExitCode)
						assert.Less(t, o.took, 5*time.Second, "SIGTERM must end sleep well before the grace")
					},
				},
				{
					name: "timeout falls back to SIGKILL after the grace",
					argv: []string{"sh", "-c", `trap "" TERM; sleep 1000`},
					opts: func(o *Options) { o.Timeout, o.KillGrace = 200*time.Millisecond, 300*time.Millisecond },
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.True(t, o.res.TimedOut)
						assert.Equal(t, 124, o.res.ExitCode)
						assert.GreaterOrEqual(t, o.took, 500*time.Millisecond, "SIGKILL comes after the grace")
						assert.Less(t, o.took, 500*time.Millisecond+teardownBound+2*time.Second)
					},
				},
				{
					// The supervisor answers the command's own exec, then
					// wedges on the shell's: the command hangs in exec until
					// the timeout kills it, and teardown gives up on the
					// wedged supervisor after teardownBound.
					name: "timeout with a wedged supervisor stays bounded",
					argv: []string{"sh", "-c", "/bin/true"},
					opts: func(o *Options) {
						o.WedgeSupervisorAfter = 1
						o.Timeout, o.KillGrace = 300*time.Millisecond, 200*time.Millisecond
					},
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.True(t, o.res.TimedOut)
						assert.Equal(t, 124, o.res.ExitCode)
						assert.Less(t, o.took, 300*time.Millisecond+200*time.Millisecond+teardownBound+2*time.Second, "teardown must stay bounded")
					},
					// The wedged supervisor is left behind with its listener
					// and eventfd, until cordon exits.
					leaks: []string{"anon_inode:seccomp notify", "anon_inode:[eventfd]"},
				},
				{
					// The supervisor answers the command's own exec and
					// goes away: the shell's next exec fails instead of
					// running unchecked.
					name: "execs fail closed when the supervisor is gone",
					argv: []string{"sh", "-c", `/bin/true; echo "rc=$?"`},
					opts: func(o *Options) { o.DropSupervisorAfter = 1 },
					check: func(t *testing.T, o runOutcome) {
						require.NoError(t, o.err)
						assert.NotEqual(t, "rc=0\n", o.stdout, "the exec after the drop must fail")
						assert.True(t, strings.HasPrefix(o.stdout, "rc="), "the shell goes on and reports: %q", o.stdout)
					},
				},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					before := openFDs(t)
					start := time.Now()
					o := runCordon(t, iso, tc.opts, tc.argv...)
					o.took = time.Since(start)
					tc.check(t, o)
					if t.Failed() {
						t.Logf("stdout: %q\nstderr: %s", o.stdout, o.stderr)
					}
					assert.NotContains(t, o.stderr, "DATA RACE", "the init reported a data race")
					assertNoLeaks(t, before, tc.leaks...)
				})
			}
		})
	}
}

func openFDs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+" -> "+l)
	}
	return out
}

// assertNoLeaks checks that Run left no descriptor open and no child
// behind (the supervisor's listener and eventfd included), except
// descriptors whose link contains one of allowed.
func assertNoLeaks(t *testing.T, before []string, allowed ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var after []string
		for _, fd := range openFDs(t) {
			if !slices.Contains(before, fd) && slices.ContainsFunc(allowed, func(a string) bool { return strings.Contains(fd, a) }) {
				continue
			}
			after = append(after, fd)
		}
		kids := proc.Children(os.Getpid())
		if len(after) <= len(before) && len(kids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			assert.ElementsMatch(t, before, after, "descriptors before and after Run")
			assert.Empty(t, kids, "children left after Run")
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesWith lists the processes whose /proc/PID/cmdline contains s.
func processesWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// TestLayoutFailureEndsEarlyStartedBwrap: bubblewrap starts before the
// sandbox's layout is worked out and waits for its options on a pipe. A
// layout that cannot be made (here a deny_read rule over a read-only
// bind) must end the run with the layout's own error, and leave no
// bubblewrap behind, nor anything it would have started.
func TestLayoutFailureEndsEarlyStartedBwrap(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	ro := t.TempDir()
	pol := denyRead(t, ro)
	o := runCordon(t, IsolationBwrap, func(o *Options) {
		o.Policy = pol
		o.RO = []string{ro}
	}, "sh", "-c", "echo RAN")
	var se *SetupError
	require.ErrorAs(t, o.err, &se)
	assert.Contains(t, o.err.Error(), "which is bound into the sandbox")
	assert.NotContains(t, o.stdout, "RAN")
	assert.Empty(t, proc.Children(os.Getpid()), "nothing of the sandbox is left")
}

// TestBwrapOptions: what goes through bubblewrap's --args pipe is its
// command line less the program and the init's command, which must be the
// one it was started with; an option holding a NUL is refused.
func TestBwrapOptions(t *testing.T) {
	first := []string{"/usr/bin/bwrap", "--args", "5", "--", "/c/cordon", InitArg}
	full := []string{"/usr/bin/bwrap", "--ro-bind", "/", "/", "--", "/c/cordon", InitArg}
	opts, err := bwrapOptions(full, first)
	require.NoError(t, err)
	assert.Equal(t, []string{"--ro-bind", "/", "/"}, opts)
	for _, bad := range [][]string{
		{"/usr/bin/bwrap", "--ro-bind", "/", "/", "--", "/other/cordon", InitArg},
		{"/bin/other", "--", "/c/cordon", InitArg},
		{"--", "/c/cordon", InitArg},
	} {
		_, err := bwrapOptions(bad, first)
		assert.Error(t, err, "%q", bad)
	}
	var b strings.Builder
	require.NoError(t, writeArgs(&b, opts))
	assert.Equal(t, "--ro-bind\x00/\x00/\x00", b.String())
	assert.Error(t, writeArgs(&b, []string{"a\x00b"}))
}

// TestLayoutChangedBeforeMountIsRefused: the layout is worked out from
// paths, and bubblewrap resolves each bind's path again when it mounts it.
// Between the two (a test hook here; another sandbox of the same user
// writing the tree in red teams' races, 1-9 runs in 100), a directory on a
// --rw path becomes a link to the working directory (the writable bind
// lands over the read-only bind of a deny_write file), a link to a
// directory outside the layout (which the bind makes writable), or another
// directory (mounted in its place). The sandbox's mounts are checked
// before its command starts, and each run is refused; unchanged, the same
// run goes.
func TestLayoutChangedBeforeMountIsRefused(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	root := t.TempDir()
	dir := filepath.Join(root, "work")
	guard := filepath.Join(dir, "guard.txt")
	// outside is a directory the sandbox sees read-only through the host's
	// root: not under /tmp, which is private there.
	outside, err := os.MkdirTemp("/var/tmp", "cordon-outside-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(outside) })
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Files:   policy.FilePolicy{DenyWrite: []policy.FileRule{{Pattern: guard, Source: "test"}}},
	})
	require.NoError(t, err)
	rw := filepath.Join(dir, "a", "b", "c", "d", "e")
	require.NoError(t, os.MkdirAll(rw, 0o755))
	require.NoError(t, os.WriteFile(guard, []byte("keep\n"), 0o644))
	run := func() runOutcome {
		return runCordon(t, IsolationBwrap, func(o *Options) {
			o.Policy, o.Dir, o.RW = pol, dir, []string{rw}
		}, "sh", "-c", "echo changed >> "+guard+"; echo changed > "+filepath.Join(outside, "planted")+"; echo RAN")
	}
	o := run()
	require.NoError(t, o.err)
	assert.Contains(t, o.stdout, "RAN", "the unchanged layout runs")
	t.Cleanup(func() { testHookLayout = nil })

	for _, tc := range []struct {
		name string
		swap func(t *testing.T)
	}{
		{"a link to the working directory", func(t *testing.T) {
			require.NoError(t, os.Symlink("../../../..", rw))
		}},
		{"a link outside the layout", func(t *testing.T) {
			// Relative: bubblewrap resolves it while it builds the new
			// root, where an absolute target is not yet there.
			rel, err := filepath.Rel(filepath.Dir(rw), outside)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(rel, rw))
		}},
		{"another directory", func(t *testing.T) {
			require.NoError(t, os.Mkdir(rw, 0o755))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testHookLayout = func() {
				require.NoError(t, os.Rename(rw, rw+".old"))
				tc.swap(t)
			}
			o := run()
			testHookLayout = nil
			require.NoError(t, os.RemoveAll(rw))
			require.NoError(t, os.Rename(rw+".old", rw))
			var se *SetupError
			require.ErrorAs(t, o.err, &se, "stdout %q stderr %q", o.stdout, o.stderr)
			assert.Contains(t, o.err.Error(), "a path on the way changed while the sandbox was set up")
			assert.NotContains(t, o.stdout, "RAN")
			b, err := os.ReadFile(guard)
			require.NoError(t, err)
			assert.Equal(t, "keep\n", string(b))
			assert.NoFileExists(t, filepath.Join(outside, "planted"))
		})
	}
}

// swapForLink makes a directory on the way to a path a link while
// bubblewrap mounts the layout, and puts it back before the layout is
// checked: what another sandbox of the same user writing that tree can do
// in a race (red teams: 3-7 runs in 10 timed to the victim's start), here
// through the test hooks on each side of bubblewrap's set-up.
func swapForLink(t *testing.T, dir, link string) {
	t.Helper()
	testHookLayout = func() {
		require.NoError(t, os.Rename(dir, dir+".real"))
		require.NoError(t, os.Symlink(link, dir))
	}
	testHookMounted = func() {
		require.NoError(t, os.Remove(dir))
		require.NoError(t, os.Rename(dir+".real", dir))
	}
	t.Cleanup(func() {
		testHookLayout, testHookMounted = nil, nil
		if _, err := os.Lstat(dir + ".real"); err == nil {
			_ = os.Remove(dir)
			_ = os.Rename(dir+".real", dir)
		}
	})
}

// refusedWhenSwapped runs run as laid out, which must go and print
// exactly want; then with dir swapped for a link to link while bubblewrap
// sets the sandbox up (swapForLink), which must be refused with msg in its
// error and print nothing of secret.
func refusedWhenSwapped(t *testing.T, run func() runOutcome, want, dir, link, msg, secret string) {
	t.Helper()
	o := run()
	require.NoError(t, o.err)
	assert.Equal(t, want, o.stdout, "the unchanged layout runs")
	swapForLink(t, dir, link)
	o = run()
	var se *SetupError
	require.ErrorAs(t, o.err, &se, "stdout %q stderr %q", o.stdout, o.stderr)
	assert.Contains(t, o.err.Error(), msg)
	assert.NotContains(t, o.stdout, secret)
}

// sharedTree is a directory the sandbox sees from the host's file system,
// read-only unless bound (not under /tmp, which is private there), removed
// at the end of the test.
func sharedTree(t *testing.T, prefix string) string {
	t.Helper()
	tree, err := os.MkdirTemp("/var/tmp", prefix)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tree) })
	return tree
}

// denyRead is a policy allowing every exec, with path unreadable.
func denyRead(t *testing.T, path string) *policy.Policy {
	t.Helper()
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Files:   policy.FilePolicy{DenyRead: []policy.FileRule{{Pattern: path, Source: "test"}}},
	})
	require.NoError(t, err)
	return pol
}

// TestCoverLandedElsewhereIsRefused: a deny_read file or directory in a
// tree the sandbox sees read-only (another sandbox writes it). A directory
// on its path is a link to a decoy while bubblewrap mounts the cover, and
// back before the command starts: the cover lands on the decoy, and the
// secret is on a read-only mount, so "read-only" proves nothing. What is
// at the path must be the cover itself: each run is refused, and the
// secret never shows; unchanged, the same run goes and the secret is
// unreadable.
func TestCoverLandedElsewhereIsRefused(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	// Not under /tmp, which is private in the sandbox.
	tree := sharedTree(t, "cordon-cover-")
	sub := filepath.Join(tree, "sub")
	for _, d := range []string{filepath.Join(sub, "keys"), filepath.Join(tree, "decoy", "keys")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(sub, "secret"), []byte("SECRET-FILE\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "keys", "id"), []byte("SECRET-DIR\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "decoy", "secret"), []byte("decoy\n"), 0o644))

	for _, tc := range []struct{ name, path string }{
		{"a file", filepath.Join(sub, "secret")},
		{"a directory", filepath.Join(sub, "keys")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := denyRead(t, tc.path)
			run := func() runOutcome {
				return runCordon(t, IsolationBwrap, func(o *Options) { o.Policy = pol },
					"sh", "-c", "cat "+filepath.Join(sub, "secret")+" "+filepath.Join(sub, "keys", "id")+"; echo RAN")
			}
			o := run()
			require.NoError(t, o.err)
			assert.Contains(t, o.stdout, "RAN", "the unchanged layout runs")
			assert.NotContains(t, o.stdout, map[bool]string{true: "SECRET-FILE", false: "SECRET-DIR"}[tc.name == "a file"])

			swapForLink(t, sub, "decoy")
			o = run()
			var se *SetupError
			require.ErrorAs(t, o.err, &se, "stdout %q stderr %q", o.stdout, o.stderr)
			assert.Contains(t, o.err.Error(), "has not its cover on it")
			assert.NotContains(t, o.stdout, "SECRET")
			assert.NotContains(t, o.stdout, "RAN")
		})
	}
}

// TestWritableBindLandedElsewhereIsRefused: a --rw path that is a mount
// point on the host already. A directory above it is a link to a directory
// the sandbox must not write while bubblewrap binds it, and back before the
// command starts: the writable bind lands on that directory, and the path is
// still a mount point with the file the layout bound (the host's mount,
// copied into the sandbox: read-only under the root's bind, writable under
// the working directory's, where a red team wrote another repository's hook
// 7 runs in 300). The layout's bind must be on top of the host's mounts at
// the path: each run is refused and nothing is written outside.
func TestWritableBindLandedElsewhereIsRefused(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	if os.Geteuid() != 0 {
		testcap.SkipOrFail(t, "mounting the host's tmpfs needs root")
	}
	tree := sharedTree(t, "cordon-rwmount-")
	outside := filepath.Join(tree, "outside", "rw")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	for _, tc := range []struct {
		name  string
		under string // the working directory, or "" for runCordon's own
		want  string
	}{
		{"under the read-only root", "", "has 1 mounts on it, the host's 1 without the layout's: it landed elsewhere"},
		{"under the working directory", "work", "has 1 mounts on it, the host's 1 without the layout's: it landed elsewhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(tree, "root")
			if tc.under != "" {
				base = filepath.Join(tree, tc.under)
			}
			parent := filepath.Join(base, "p")
			rw := filepath.Join(parent, "rw")
			require.NoError(t, os.MkdirAll(rw, 0o755))
			require.NoError(t, unix.Mount("tmpfs", rw, "tmpfs", 0, "mode=0755"))
			t.Cleanup(func() { _ = unix.Unmount(rw, unix.MNT_DETACH) })
			planted := filepath.Join(outside, "planted")
			run := func() runOutcome {
				return runCordon(t, IsolationBwrap, func(o *Options) {
					o.RW = []string{rw}
					if tc.under != "" {
						o.Dir = base
					}
				}, "sh", "-c", "echo x > "+filepath.Join(rw, "mine")+"; echo x > "+planted+"; echo RAN")
			}
			o := run()
			require.NoError(t, o.err)
			assert.Contains(t, o.stdout, "RAN", "the unchanged layout runs")
			assert.FileExists(t, filepath.Join(rw, "mine"))
			assert.NoFileExists(t, planted)

			link, err := filepath.Rel(base, filepath.Dir(outside))
			require.NoError(t, err)
			swapForLink(t, parent, link)
			o = run()
			var se *SetupError
			require.ErrorAs(t, o.err, &se, "stdout %q stderr %q", o.stdout, o.stderr)
			assert.Contains(t, o.err.Error(), tc.want)
			assert.NotContains(t, o.stdout, "RAN")
			assert.NoFileExists(t, planted)
		})
	}
}

// TestPrivateTmpfsLandedElsewhereIsRefused: a private directory (~/.cache:
// an empty tmpfs in the sandbox, written there and discarded) whose parent
// is a link to a decoy while bubblewrap mounts it, and back before the
// command starts: the tmpfs lands on the decoy, and the host's own
// directory shows at the path. What is at the path must be a tmpfs, and
// where the host's ~/.cache is a tmpfs mount point itself (a red team's
// note: its copy under the root's bind is a tmpfs mount point too), the
// private one must be on top of it: each run is refused, and the host's
// cache never shows.
func TestPrivateTmpfsLandedElsewhereIsRefused(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	for _, mounted := range []bool{false, true} {
		t.Run(map[bool]string{false: "a directory", true: "a tmpfs mount point"}[mounted], func(t *testing.T) {
			if mounted && os.Geteuid() != 0 {
				testcap.SkipOrFail(t, "mounting the host's tmpfs needs root")
			}
			tree := sharedTree(t, "cordon-private-")
			home := filepath.Join(tree, "home")
			cache := filepath.Join(home, ".cache")
			for _, d := range []string{cache, filepath.Join(tree, "decoy", ".cache")} {
				require.NoError(t, os.MkdirAll(d, 0o755))
			}
			if mounted {
				require.NoError(t, unix.Mount("tmpfs", cache, "tmpfs", 0, "mode=0755"))
				t.Cleanup(func() { _ = unix.Unmount(cache, unix.MNT_DETACH) })
			}
			require.NoError(t, os.WriteFile(filepath.Join(cache, "c"), []byte("HOST-CACHE\n"), 0o644))
			run := func() runOutcome {
				return runCordon(t, IsolationBwrap, func(o *Options) { o.Env = append(o.Env, "HOME="+home) },
					"sh", "-c", "cat "+filepath.Join(cache, "c")+"; echo RAN")
			}
			refusedWhenSwapped(t, run, "RAN\n", home, "decoy",
				map[bool]string{false: "has not its cover on it", true: "has 1 mounts on it, the host's 1"}[mounted], "HOST-CACHE")
		})
	}
}

// TestReadOnlyBindSourceSwappedIsRefused: a linked worktree whose
// repository lies outside the writable tree gets a private view of the
// repository's git directory, each entry bound read-only into a tmpfs. An
// entry that is a directory when the layout is made and a link to a
// deny_read directory when bubblewrap binds it (another sandbox writing
// the repository flips it: a red team read ~/.ssh so, 16 runs in 30) shows
// the secret, which no cover covers there; the destination, in the tmpfs,
// needs nothing put back. Each read-only bind must show the file it showed
// when the layout was made: the run is refused.
func TestReadOnlyBindSourceSwappedIsRefused(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	tree := sharedTree(t, "cordon-rosrc-")
	main, wt := filepath.Join(tree, "main"), filepath.Join(tree, "wt")
	git := func(dir string, args ...string) {
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	require.NoError(t, os.MkdirAll(main, 0o755))
	git(main, "init", "-q")
	git(main, "commit", "-q", "--allow-empty", "-m", "x")
	git(main, "worktree", "add", "-q", wt)
	secret := filepath.Join(tree, "secret")
	require.NoError(t, os.MkdirAll(secret, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(secret, "id"), []byte("SSH-SECRET\n"), 0o600))
	entry := filepath.Join(main, ".git", "zz")
	require.NoError(t, os.Mkdir(entry, 0o755))
	pol := denyRead(t, secret)
	run := func() runOutcome {
		return runCordon(t, IsolationBwrap, func(o *Options) { o.Policy, o.Dir = pol, wt },
			"sh", "-c", "cat "+filepath.Join(entry, "id")+" "+filepath.Join(secret, "id")+"; echo RAN")
	}
	refusedWhenSwapped(t, run, "RAN\n", entry, "../../secret", "(bound read-only) is not the file the layout bound", "SSH-SECRET")
}

// TestCoverUnderPrivateDirectory: a deny_read file inside a --ro bind
// inside the private ~/.cache tmpfs (mounted with the binds, in depth
// order, so the bind and the cover on it show through). Unchanged, the run
// goes and the secret is unreadable (a red team found every such run
// refused: the cover was left out of the proof, and the secret itself
// required at its path); the secret swapped for a link to a decoy while
// bubblewrap mounts the cover, and back, is refused (that same red team
// read it so, 3 runs in 40).
func TestCoverUnderPrivateDirectory(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	tree := sharedTree(t, "cordon-privcover-")
	home := filepath.Join(tree, "home")
	sub := filepath.Join(home, ".cache", "foo", "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	secret := filepath.Join(sub, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("SECRET\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "decoy"), []byte("decoy\n"), 0o644))
	pol := denyRead(t, secret)
	run := func() runOutcome {
		return runCordon(t, IsolationBwrap, func(o *Options) {
			o.Policy, o.RO = pol, []string{filepath.Join(home, ".cache", "foo")}
			o.Env = append(o.Env, "HOME="+home)
		}, "sh", "-c", "cat "+secret+"; echo RAN")
	}
	refusedWhenSwapped(t, run, "RAN\n", secret, "decoy", "has not its cover on it", "SECRET")
}
