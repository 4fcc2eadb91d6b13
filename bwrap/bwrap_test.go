package bwrap

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indexOf returns where seq starts in args, or -1.
func indexOf(args []string, seq ...string) int {
	for i := 0; i+len(seq) <= len(args); i++ {
		if slices.Equal(args[i:i+len(seq)], seq) {
			return i
		}
	}
	return -1
}

// assertBefore checks that both option sequences are present and first
// comes before second.
func assertBefore(t *testing.T, opts, first, second []string) {
	t.Helper()
	i, j := indexOf(opts, first...), indexOf(opts, second...)
	require.GreaterOrEqual(t, i, 0, "%q missing from %q", first, opts)
	require.GreaterOrEqual(t, j, 0, "%q missing from %q", second, opts)
	assert.Less(t, i, j, "%q must come before %q in %q", first, second, opts)
}

// options returns the part of args before "--", where bwrap reads options.
func options(t *testing.T, args []string) []string {
	t.Helper()
	i := slices.Index(args, "--")
	require.GreaterOrEqual(t, i, 0, "no -- separator in %q", args)
	return args[:i]
}

func TestSpecArgs(t *testing.T) {
	cmd := []string{"/usr/bin/cordon", "__cordon-init"}
	tests := []struct {
		name  string
		spec  Spec
		check func(t *testing.T, opts []string)
	}{
		{
			name: "base layout",
			spec: Spec{Dir: "/home/u/proj", Command: cmd},
			check: func(t *testing.T, opts []string) {
				assert.Equal(t, 0, indexOf(opts, "--ro-bind", "/", "/"), "read-only root first")
				assert.GreaterOrEqual(t, indexOf(opts, "--proc", "/proc"), 0)
				assert.GreaterOrEqual(t, indexOf(opts, "--dev", "/dev"), 0)
				assert.Greater(t, indexOf(opts, "--bind", "/home/u/proj", "/home/u/proj"), 0, "working directory bound writable")
				assert.GreaterOrEqual(t, indexOf(opts, "--chdir", "/home/u/proj"), 0)
			},
		},
		{
			name: "dir / is not bound writable",
			spec: Spec{Dir: "/", Command: cmd},
			check: func(t *testing.T, opts []string) {
				assert.NotContains(t, opts, "--bind")
				assert.GreaterOrEqual(t, indexOf(opts, "--chdir", "/"), 0)
			},
		},
		{
			name: "dir // is / too",
			spec: Spec{Dir: "//", Command: cmd},
			check: func(t *testing.T, opts []string) {
				assert.NotContains(t, opts, "--bind")
			},
		},
		{
			name: "no dir: no bind, no chdir",
			spec: Spec{Command: cmd},
			check: func(t *testing.T, opts []string) {
				assert.NotContains(t, opts, "--bind")
				assert.NotContains(t, opts, "--chdir")
			},
		},
		{
			name: "dir under /tmp is bound after the private /tmp",
			spec: Spec{Dir: "/tmp/work", Command: cmd},
			check: func(t *testing.T, opts []string) {
				tmpfs := indexOf(opts, "--tmpfs", "/tmp")
				bind := indexOf(opts, "--bind", "/tmp/work", "/tmp/work")
				require.GreaterOrEqual(t, tmpfs, 0)
				require.GreaterOrEqual(t, bind, 0)
				assert.Greater(t, bind, tmpfs, "a bind before --tmpfs /tmp would be hidden by it")
			},
		},
		// A bind hides whatever was bound below its target before it, so
		// a path must be bound after every path that contains it.
		{
			name: "ro inside the working directory is bound after it",
			spec: Spec{Dir: "/w", RO: []string{"/w/.git"}, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assertBefore(t, opts, []string{"--bind", "/w", "/w"}, []string{"--ro-bind", "/w/.git", "/w/.git"})
			},
		},
		{
			name: "ro inside an rw path is bound after it",
			spec: Spec{RW: []string{"/data"}, RO: []string{"/data/keys"}, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assertBefore(t, opts, []string{"--bind", "/data", "/data"}, []string{"--ro-bind", "/data/keys", "/data/keys"})
			},
		},
		{
			name: "same path rw and ro: ro wins",
			spec: Spec{RW: []string{"/x"}, RO: []string{"/x"}, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assertBefore(t, opts, []string{"--bind", "/x", "/x"}, []string{"--ro-bind", "/x", "/x"})
			},
		},
		{
			name: "rw binds keep the order given",
			spec: Spec{RW: []string{"/b", "/a"}, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assertBefore(t, opts, []string{"--bind", "/b", "/b"}, []string{"--bind", "/a", "/a"})
			},
		},
		{
			name: "working directory under a read-only parent is bound after it",
			spec: Spec{Dir: "/home/u/proj", RO: []string{"/home/u"}, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assertBefore(t, opts, []string{"--ro-bind", "/home/u", "/home/u"}, []string{"--bind", "/home/u/proj", "/home/u/proj"})
			},
		},
		{
			name: "rw inside a read-only path is bound after it",
			spec: Spec{RW: []string{"/home/u/.cache"}, RO: []string{"/home/u"}, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assertBefore(t, opts, []string{"--ro-bind", "/home/u", "/home/u"}, []string{"--bind", "/home/u/.cache", "/home/u/.cache"})
			},
		},
		{
			name: "exe bound after the private /tmp and the user's binds",
			spec: Spec{Dir: "/w", RW: []string{"/tmp"}, RO: []string{"/opt"}, Exe: "/tmp/go-build/cordon.test", Command: cmd},
			check: func(t *testing.T, opts []string) {
				exe := indexOf(opts, "--ro-bind", "/tmp/go-build/cordon.test", "/tmp/go-build/cordon.test")
				require.GreaterOrEqual(t, exe, 0)
				assert.Greater(t, exe, indexOf(opts, "--tmpfs", "/tmp"))
				assert.Greater(t, exe, indexOf(opts, "--bind", "/tmp", "/tmp"))
				assert.Greater(t, exe, indexOf(opts, "--ro-bind", "/opt", "/opt"))
			},
		},
		{
			name: "hidden paths come after every bind, so a bind of a parent cannot expose them",
			spec: Spec{Dir: "/home/u", RW: []string{"/home/u/.cache"}, Hide: []string{"/home/u/.cache/cordon/run"}, HideFiles: []string{"/home/u/d.sock"}, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assertBefore(t, opts, []string{"--bind", "/home/u/.cache", "/home/u/.cache"}, []string{"--tmpfs", "/home/u/.cache/cordon/run"})
				assertBefore(t, opts, []string{"--bind", "/home/u", "/home/u"}, []string{"--ro-bind", "/dev/null", "/home/u/d.sock"})
			},
		},
		{
			name: "net none unshares the network",
			spec: Spec{Net: NetNone, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assert.Contains(t, opts, "--unshare-net")
			},
		},
		{
			name: "net host keeps it",
			spec: Spec{Net: NetHost, Command: cmd},
			check: func(t *testing.T, opts []string) {
				assert.NotContains(t, opts, "--unshare-net")
			},
		},
		{
			name: "empty net is host",
			spec: Spec{Command: cmd},
			check: func(t *testing.T, opts []string) {
				assert.NotContains(t, opts, "--unshare-net")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, err := tc.spec.Args()
			require.NoError(t, err)
			opts := options(t, args)
			tc.check(t, opts)
			// Always: own pid namespace, dies with its parent, and no new
			// session (the launcher manages the terminal's foreground group).
			assert.Contains(t, opts, "--unshare-pid")
			assert.Contains(t, opts, "--die-with-parent")
			assert.NotContains(t, args, "--new-session")
			assert.Equal(t, tc.spec.Command, args[len(opts)+1:], "the command follows --, untouched")
		})
	}
}

func TestSpecArgsCommandAfterSeparator(t *testing.T) {
	// Words that look like bwrap options are the command's, not bwrap's.
	spec := Spec{Dir: "/w", Command: []string{"/bin/echo", "--bind", "/", "/", "--"}}
	args, err := spec.Args()
	require.NoError(t, err)
	i := slices.Index(args, "--")
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, spec.Command, args[i+1:])
}

func TestSpecArgsErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{name: "empty command", spec: Spec{Dir: "/w"}, want: "empty command"},
		{name: "nil command", spec: Spec{Command: nil}, want: "empty command"},
		{name: "unknown net", spec: Spec{Net: "bridge", Command: []string{"/bin/true"}}, want: `unknown network mode "bridge"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, err := tc.spec.Args()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, args)
		})
	}
}

func TestParseNet(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Net
		wantErr bool
	}{
		{name: "host", in: "host", want: NetHost},
		{name: "none", in: "none", want: NetNone},
		{name: "filter", in: "filter", want: NetFilter},
		{name: "empty", in: "", wantErr: true},
		{name: "upper case", in: "None", wantErr: true},
		{name: "unknown", in: "bridge", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNet(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "want host, none or filter")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{name: "nil", argv: nil, want: ""},
		{name: "plain", argv: []string{"bwrap", "--ro-bind", "/", "/"}, want: "bwrap --ro-bind / /"},
		{name: "space", argv: []string{"sh", "-c", "echo hi"}, want: `sh -c "echo hi"`},
		{name: "tab and newline", argv: []string{"a\tb", "c\nd"}, want: `"a\tb" "c\nd"`},
		{name: "quotes", argv: []string{`say "x"`, "it's"}, want: `"say \"x\"" "it's"`},
		{name: "shell metacharacters", argv: []string{"$HOME", "`id`", `a\b`}, want: "\"$HOME\" \"`id`\" \"a\\\\b\""},
		{name: "empty word", argv: []string{"touch", ""}, want: `touch ""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Describe(tc.argv))
		})
	}
}

// TestSpecArgsProtect: a protected path inside a writable bind is bound
// read-only after every bind above it, with each directory in between
// pinned (a mount point cannot be renamed away); one no writable bind
// holds is left out.
func TestSpecArgsProtect(t *testing.T) {
	s := Spec{Dir: "/w", RO: []string{"/w/a/ro", "/r"}, Command: []string{"x"},
		Protect: []string{"/w/a/b/cordon.yaml", "/etc/cordon.yaml", "/w/cordon.yaml", "/r/cordon.yaml", "/w/a/b/.cordon.yaml"}}
	args, err := s.Args()
	require.NoError(t, err)
	var binds []string
	for i := 0; i+2 < len(args); i++ {
		if args[i] == "--bind" || args[i] == "--ro-bind" {
			require.Equal(t, args[i+1], args[i+2])
			binds = append(binds, args[i]+" "+args[i+1])
			i += 2
		}
	}
	assert.Equal(t, []string{
		"--ro-bind /",
		"--bind /w",
		"--ro-bind /r",
		"--ro-bind /w/cordon.yaml",
		"--bind /w/a",
		"--ro-bind /w/a/ro",
		"--bind /w/a/b",
		"--ro-bind /w/a/b/cordon.yaml",
		"--ro-bind /w/a/b/.cordon.yaml",
	}, binds)
}

// TestSpecArgsOneMountPerBind: a path asked for twice alike (the git
// layout's protected config and the files policy's) is bound once, while a
// --ro-bind after a --bind of the same path, and a --bind after that, all
// stay: the last one is the mount the sandbox sees.
func TestSpecArgsOneMountPerBind(t *testing.T) {
	s := Spec{Dir: "/w", Command: []string{"x"},
		RW:      []string{"/w/g", "/w/g/", "/w/x"},
		RO:      []string{"/w/x", "/w/x/"},
		Protect: []string{"/w/g/config", "/w/g/hooks", "/w/g/config", "/w/g/hooks/"}}
	args, err := s.Args()
	require.NoError(t, err)
	var binds []string
	for i := 0; i+2 < len(args); i++ {
		if args[i] == "--bind" || args[i] == "--ro-bind" {
			binds = append(binds, args[i]+" "+filepath.Clean(args[i+1]))
			i += 2
		}
	}
	assert.Equal(t, []string{
		"--ro-bind /",
		"--bind /w",
		"--bind /w/g",
		"--bind /w/x",
		"--ro-bind /w/x",
		"--ro-bind /w/g/config",
		"--ro-bind /w/g/hooks",
	}, binds)

	s = Spec{Dir: "/w", Command: []string{"x"}, RW: []string{"/w/x"}, RO: []string{"/w/x"}, Protect: []string{"/w/x"}}
	args, err = s.Args()
	require.NoError(t, err)
	assert.Contains(t, strings.Join(args, " "), "--bind /w/x /w/x --ro-bind /w/x /w/x --unshare-pid",
		"a protect after the same --ro-bind is the same mount: one")
}

// TestSpecArgsPrivate: a private tmpfs lands before the binds below it and
// after those above it, whatever order they were given in, and a Protect
// path it holds is left alone (nothing on the host to protect there).
func TestSpecArgsPrivate(t *testing.T) {
	s := Spec{Dir: "/w", RW: []string{"/c/.git/objects", "/c/.git/worktrees/wt"}, RO: []string{"/c/.git/config", "/c"},
		Private: []string{"/c/.git"}, Protect: []string{"/c/.git/commondir", "/c/.git/worktrees/wt/gitdir"},
		Command: []string{"x"}}
	args, err := s.Args()
	require.NoError(t, err)
	var mounts []string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--bind", "--ro-bind":
			require.Equal(t, args[i+1], args[i+2])
			mounts = append(mounts, args[i]+" "+args[i+1])
			i += 2
		case "--tmpfs":
			mounts = append(mounts, args[i]+" "+args[i+1])
			i++
		}
	}
	assert.Equal(t, []string{
		"--ro-bind /",
		"--tmpfs /tmp",
		"--bind /w",
		"--ro-bind /c",
		"--tmpfs /c/.git",
		"--bind /c/.git/objects",
		"--ro-bind /c/.git/config",
		"--bind /c/.git/worktrees/wt",
		"--ro-bind /c/.git/worktrees/wt/gitdir",
	}, mounts)
}

// TestArgsFiles: private state is a tmpfs in depth order with the binds (a
// bind below it still shows); unreadable paths come after every bind, a
// directory as a mode-000 read-only tmpfs, a file covered by the
// placeholder.
func TestArgsFiles(t *testing.T) {
	s := Spec{Dir: "/home/me/repo", RW: []string{"/home/me/.cache/go-build"}, Private: []string{"/home/me/.cache"},
		Protect:        []string{"/home/me/repo/.git/hooks"},
		Unreadable:     []Unreadable{{Path: "/home/me/.aws", Dir: true}, {Path: "/home/me/repo/.env"}},
		UnreadableFile: "/tmp/cordon-files-1/denied", Command: []string{"sh"}}
	a, err := s.Args()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(a, " ")
	want := "--bind /home/me/repo /home/me/repo --tmpfs /home/me/.cache --bind /home/me/.cache/go-build /home/me/.cache/go-build " +
		"--bind /home/me/repo/.git /home/me/repo/.git --ro-bind /home/me/repo/.git/hooks /home/me/repo/.git/hooks " +
		"--perms 0000 --tmpfs /home/me/.aws --remount-ro /home/me/.aws --ro-bind /tmp/cordon-files-1/denied /home/me/repo/.env --unshare-pid"
	if !strings.Contains(got, want) {
		t.Errorf("args:\n%s\nwant in them:\n%s", got, want)
	}
	// A hidden path deeper in a writable bind has its parents pinned (a
	// writable self-bind each, before the cover), so none can be renamed.
	s.Unreadable = append(s.Unreadable, Unreadable{Path: "/home/me/repo/config/secrets", Dir: true})
	a, err = s.Args()
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(a, " ")
	if want := "--bind /home/me/repo/config /home/me/repo/config"; !strings.Contains(got, want) ||
		strings.Index(got, want) > strings.Index(got, "--tmpfs /home/me/repo/config/secrets") {
		t.Errorf("args:\n%s\nwant the parent pinned before the cover: %s", got, want)
	}
	if strings.Contains(got, "--bind /home/me/repo/config/secrets ") || strings.Contains(got, "--bind /home/me/.aws") {
		t.Errorf("args:\n%s\nthe hidden path itself, or one outside a writable bind, is not pinned", got)
	}
	s.UnreadableFile = ""
	if _, err := s.Args(); err == nil {
		t.Error("an unreadable file without a placeholder must be an error")
	}
}

// TestReadOnlyPaths: the paths a spec leaves read-only are its read-only
// binds (a --ro of a --rw path wins: read-only binds of a path come after
// its writable ones), the protected paths' own binds and the unreadable
// covers; not a protected path no writable bind holds (the read-only root
// has it), nor what a hidden directory's tmpfs covers.
func TestReadOnlyPaths(t *testing.T) {
	s := Spec{Dir: "/w", Command: []string{"x"},
		RW:         []string{"/w/x", "/w/re"},
		RO:         []string{"/w/x/ro", "/w/re", "/h/cordon/ro"},
		ROTry:      []string{"/w/g/maybe"},
		Protect:    []string{"/w/cordon.yaml", "/w/a/b/.git/config", "/elsewhere/f"},
		Unreadable: []Unreadable{{Path: "/w/secret"}, {Path: "/h/cordon/s"}},
		Hide:       []string{"/h/cordon"},
	}
	must, try := s.ReadOnlyPaths()
	assert.ElementsMatch(t, []string{"/w/re", "/w/cordon.yaml", "/w/x/ro", "/w/a/b/.git/config", "/w/secret"}, must)
	assert.Equal(t, []string{"/w/g/maybe"}, try)
}

// TestCovers: every unreadable, hidden, private and /dev/null-covered path
// is listed with what covers it, but for one inside a hidden or unreadable
// directory (its tmpfs, after every bind, leaves nothing of it); one inside
// a Private directory is listed (a red team: a cover there was left out,
// and its path proven as the secret itself); a path that merely shares a
// prefix with a covered directory is still listed.
func TestCovers(t *testing.T) {
	s := Spec{Dir: "/w", Command: []string{"x"},
		Unreadable: []Unreadable{{Path: "/w/secret"}, {Path: "/w/keys/", Dir: true}, {Path: "/w/keys/inner"}, {Path: "/h/cordon/s"}, {Path: "/w/state/.env"}},
		Hide:       []string{"/h/cordon", "/w/keys/hidden"},
		HideFiles:  []string{"/run/bus", "/w/keysock"},
		Private:    []string{"/h/.cache", "/h/cordon/p", "/w/state"},
	}
	assert.Equal(t, []Cover{
		{"/w/secret", CoverFile},
		{"/w/keys", CoverEmptyDir},
		{"/w/state/.env", CoverFile}, // a Private tmpfs comes before the binds below it
		{"/h/cordon", CoverTmpfs},
		{"/h/.cache", CoverTmpfs},
		{"/w/state", CoverTmpfs},
		{"/run/bus", CoverNull},
		{"/w/keysock", CoverNull},
	}, s.Covers())
	assert.Empty(t, (&Spec{}).Covers())
}

// TestSpecArgsProtectNested: a protected path inside another protected
// path, in either order, leaves the outer one read-only: no writable pin of
// it may come after its read-only bind (a red team's deny_write D and
// D/file made all of D writable but D/file). An unreadable path inside a
// protected directory pins nothing either.
func TestSpecArgsProtectNested(t *testing.T) {
	for _, protect := range [][]string{{"/w/D", "/w/D/file"}, {"/w/D/file", "/w/D"}, {"/w/D/e/f", "/w/D", "/w/D/e"}} {
		s := Spec{Dir: "/w", Command: []string{"x"}, Protect: protect,
			Unreadable: []Unreadable{{Path: "/w/D/e/secret"}}, UnreadableFile: "/p/denied"}
		args, err := s.Args()
		require.NoError(t, err)
		// What holds p in the sandbox: the last bind of the deepest path
		// at or above it, as mounts stack.
		holds := func(p string) string {
			op, depth := "", -1
			for i := 0; i+2 < len(args); i++ {
				if args[i] == "--bind" || args[i] == "--ro-bind" {
					d := filepath.Clean(args[i+2])
					if (p == d || strings.HasPrefix(p, d+"/")) && strings.Count(d, "/") >= depth {
						op, depth = args[i], strings.Count(d, "/")
					}
					i += 2
				}
			}
			return op
		}
		for _, p := range append(protect, "/w/D/e", "/w/D/other") {
			assert.Equal(t, "--ro-bind", holds(p), "%v: %s", protect, p)
		}
		assert.Equal(t, "--bind", holds("/w/x"))
	}
}

// TestSpecArgsNestedUnreadable: an unreadable file inside an unreadable
// directory gets no cover of its own (the directory's read-only tmpfs
// leaves no place for it: bubblewrap failed), nor a read-only proof.
func TestSpecArgsNestedUnreadable(t *testing.T) {
	s := Spec{Dir: "/w", Command: []string{"x"}, UnreadableFile: "/p/denied",
		Unreadable: []Unreadable{{Path: "/w/D", Dir: true}, {Path: "/w/D/file"}, {Path: "/w/E"}}}
	args, err := s.Args()
	require.NoError(t, err)
	joined := strings.Join(args, " ")
	assert.Contains(t, joined, "--perms 0000 --tmpfs /w/D --remount-ro /w/D")
	assert.Contains(t, joined, "--ro-bind /p/denied /w/E")
	assert.NotContains(t, joined, "/w/D/file")
	assert.NotContains(t, joined, "--bind /w/D", "no writable pin of D for D/file")
	assert.Equal(t, []string{"/w"}, s.WritablePaths())
	must, _ := s.ReadOnlyPaths()
	assert.ElementsMatch(t, []string{"/w/D", "/w/E"}, must)
	assert.Equal(t, []Cover{{"/w/D", CoverEmptyDir}, {"/w/E", CoverFile}}, s.Covers())
}

// TestSpecArgsHiddenParentsPinned: the directories between a writable bind
// and a hidden directory or socket are pinned (writable self-binds, mount
// points a run cannot rename): a red team renamed the daemon directory's
// parent in one run, and the next neither hid it nor found it.
func TestSpecArgsHiddenParentsPinned(t *testing.T) {
	s := Spec{Dir: "/w", Command: []string{"x"}, Hide: []string{"/w/rt/cordon"}, HideFiles: []string{"/w/a/b/sock"}}
	args, err := s.Args()
	require.NoError(t, err)
	joined := strings.Join(args, " ")
	for _, pin := range []string{"--bind /w/rt /w/rt", "--bind /w/a /w/a", "--bind /w/a/b /w/a/b"} {
		assert.Contains(t, joined, pin)
	}
	assert.Contains(t, joined, "--tmpfs /w/rt/cordon")
	assert.Contains(t, joined, "--ro-bind /dev/null /w/a/b/sock")
	assert.ElementsMatch(t, []string{"/w", "/w/rt", "/w/a", "/w/a/b"}, s.WritablePaths())
}

// TestRootDirHeld: which writable trees a root sandbox could leave a
// bubblewrap in that Find would take (see Find's rootDirs).
func TestRootDirHeld(t *testing.T) {
	usrBin, err := filepath.EvalSymlinks("/usr/bin")
	require.NoError(t, err)
	for w, want := range map[string]string{
		"/usr/bin":       usrBin,
		"/usr/bin/":      usrBin,
		"/usr/bin/bwrap": usrBin,
		"/usr":           usrBin,
		"/":              usrBin,
		"/nix/store/abc": "/nix/store",
		"/nix":           "/nix/store",
		"/gnu/store/x/y": "/gnu/store",
		"/usr/bin/sub":   "", // Find takes only a direct entry of /usr/bin
		"/usr/local":     "",
		"/usr/local/bin": "",
		"/work/project":  "",
		"/usr/binx":      "",
	} {
		assert.Equal(t, want, RootDirHeld(w), "%s", w)
	}
}
