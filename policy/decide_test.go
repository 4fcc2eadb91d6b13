package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecisionOrder(t *testing.T) {
	tests := []struct {
		name     string
		def      Decision
		rules    []string
		argv     string
		want     Decision
		wantRule string // the deciding rule's pattern; "" for the default
	}{
		{"deny beats allow", Allow, []string{"allow git push origin feature/*", "deny git push"}, "git push origin feature/x", Deny, "git push"},
		{"deny beats ask", Allow, []string{"ask git push", "deny git push --force"}, "git push --force", Deny, "git push --force"},
		{"ask beats allow", Deny, []string{"allow npm", "ask npm publish"}, "npm publish", Ask, "npm publish"},
		{"earliest of equal rank", Allow, []string{"deny git push", "deny git push --force"}, "git push --force", Deny, "git push"},
		{"earliest across index buckets", Allow, []string{"deny git", "deny git push"}, "git push", Deny, "git"},
		{"default allow", Allow, []string{"deny git push"}, "git status", Allow, ""},
		{"default deny", Deny, []string{"allow git status"}, "git push", Deny, ""},
		{"default ask", Ask, []string{"allow ls"}, "cat x", Ask, ""},
		{"allow in allowlist", Deny, []string{"allow git status -s"}, "git status -s", Allow, "git status -s"},
		{"allow is strict", Deny, []string{"allow git status"}, "git status -s", Deny, ""},
		{"bare allow takes any arguments", Deny, []string{"allow git"}, "git status -s", Allow, "git"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := compileRules(t, tc.def, tc.rules...)
			got := decideArgv(p, fields(tc.argv)...)
			assert.Equal(t, tc.want, got.Decision)
			if tc.wantRule == "" {
				assert.Nil(t, got.Rule)
			} else if assert.NotNil(t, got.Rule) {
				assert.Equal(t, tc.wantRule, got.Rule.Pattern)
			}
		})
	}
}

func TestResultText(t *testing.T) {
	p, err := Compile(Config{Default: Deny, Rules: []Rule{
		{Decision: Deny, Pattern: "git push", Message: "open a pull request instead", Source: "cordon.yaml:7"},
		{Decision: Deny, Pattern: "npm publish", Source: "--deny"},
	}})
	require.NoError(t, err)

	r := decideArgv(p, "git", "push", "origin", "main")
	assert.Equal(t, `deny "git push": open a pull request instead`, r.RuleText())
	assert.Equal(t, "cordon.yaml:7", r.Rule.Source)

	r = decideArgv(p, "npm", "publish")
	assert.Equal(t, `deny "npm publish"`, r.RuleText())
	assert.Equal(t, "--deny", r.Rule.Source)

	r = decideArgv(p, "ls")
	assert.Equal(t, "default deny", r.RuleText())
	assert.Equal(t, Deny, p.Default())
}

func TestFenceOverride(t *testing.T) {
	p, err := Compile(Config{Rules: []Rule{
		{Decision: Deny, Pattern: "git push"},
		{Decision: Allow, Pattern: "git push origin docs", Override: true},
	}})
	require.NoError(t, err)
	assert.Equal(t, Allow, decideArgv(p, fields("git push origin docs")...).Decision)
	assert.Equal(t, Deny, decideArgv(p, fields("git push origin main")...).Decision)
}

func TestArgv0NotTrusted(t *testing.T) {
	p := compileRules(t, Allow, "deny git push", "allow ls")
	// exec -a ls git push: the program is the resolved file, not argv[0].
	r := p.Decide(&Exec{Argv: fields("ls push origin"), Path: "/usr/bin/git", Resolved: "/usr/bin/git"})
	assert.Equal(t, Deny, r.Decision)
	// exec -a git /bin/ls push: ls, even though argv[0] says git.
	r = p.Decide(&Exec{Argv: fields("git push"), Path: "/bin/ls", Resolved: "/bin/ls"})
	assert.Equal(t, Allow, r.Decision)
}

func TestCalledAs(t *testing.T) {
	p := compileRules(t, Deny, "deny python3 -c", "allow ls")
	// A symlink python3 -> python3.12: the name it was called by counts for
	// deny rules.
	r := p.Decide(&Exec{Argv: fields("python3 -c x"), Path: "/usr/bin/python3", Resolved: "/usr/bin/python3.12"})
	assert.Equal(t, Deny, r.Decision)
	require.NotNil(t, r.Rule)
	assert.Equal(t, "python3 -c", r.Rule.Pattern)
	// ...but not for allow rules: a symlink named ls to rm is not ls.
	r = p.Decide(&Exec{Argv: fields("ls -rf x"), Path: "/tmp/ls", Resolved: "/usr/bin/rm"})
	assert.Equal(t, Deny, r.Decision)
	assert.Nil(t, r.Rule)
}

func TestGitArgv0AndAliases(t *testing.T) {
	p := compileRules(t, Allow, "deny git push")
	tests := []struct {
		name string
		argv []string
		want Decision
	}{
		{"dashed argv0", fields("git-push origin main"), Deny},
		{"dashed argv0 with path", fields("/usr/lib/git-core/git-push origin"), Deny},
		{"dashed argv0 other", fields("git-status push"), Allow},
		{"inline alias", fields("git -c alias.p=push p origin"), Deny},
		{"inline alias case", fields("git -c Alias.P=push p"), Deny},
		{"inline alias with options", []string{"git", "-c", "alias.p=-c x=y push", "p"}, Deny},
		{"chained alias", fields("git -c alias.a=b -c alias.b=push a"), Deny},
		{"alias loop ends", fields("git -c alias.a=a a"), Allow},
		{"shell alias is its own exec", []string{"git", "-c", "alias.p=!git push", "p"}, Allow},
		{"alias not used", fields("git -c alias.p=push status"), Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := p.Decide(&Exec{Argv: tc.argv, Path: "/usr/bin/git", Resolved: "/usr/bin/git"})
			assert.Equal(t, tc.want, r.Decision)
		})
	}
}

func TestLoader(t *testing.T) {
	p := compileRules(t, Allow, "deny git push", "deny /opt/bad/* run")
	tests := []struct {
		name string
		argv string
		want Decision
	}{
		{"plain", "/lib64/ld-linux-x86-64.so.2 /usr/bin/git push", Deny},
		{"library path", "/lib64/ld-linux-x86-64.so.2 --library-path /x /usr/bin/git push origin", Deny},
		{"preload argv0 inhibit-cache", "ld-linux-x86-64.so.2 --preload a.so --argv0 ls --inhibit-cache /usr/bin/git push", Deny},
		{"option with =", "/lib/ld-linux-aarch64.so.1 --library-path=/x git push", Deny},
		{"bare name", "/lib64/ld-linux-x86-64.so.2 --library-path /usr/bin git push", Deny},
		{"musl", "/lib/ld-musl-x86_64.so.1 /usr/bin/git push", Deny},
		{"nested", "/lib64/ld-linux-x86-64.so.2 /lib64/ld-linux-x86-64.so.2 /usr/bin/git push", Deny},
		{"other subcommand", "/lib64/ld-linux-x86-64.so.2 /usr/bin/git status", Allow},
		{"path rule", "/lib64/ld-linux-x86-64.so.2 /opt/bad/tool run", Deny},
		{"no program", "/lib64/ld-linux-x86-64.so.2 --help", Allow},
		{"argv0 is not the program", "/lib64/ld-linux-x86-64.so.2 --argv0 git /bin/ls push", Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv := fields(tc.argv)
			r := p.Decide(&Exec{Argv: argv, Path: argv[0], Resolved: argv[0]})
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}

	t.Run("rules naming the loader", func(t *testing.T) {
		p := compileRules(t, Allow, "deny ld-linux-x86-64.so.2 --list")
		r := decideArgv(p, fields("/lib64/ld-linux-x86-64.so.2 --list /bin/ls")...)
		assert.Equal(t, Deny, r.Decision)
	})
	t.Run("allowlist", func(t *testing.T) {
		p := compileRules(t, Deny, "allow ls")
		r := decideArgv(p, fields("/lib64/ld-linux-x86-64.so.2 /bin/ls -la")...)
		assert.Equal(t, Allow, r.Decision)
		r = decideArgv(p, fields("/lib64/ld-linux-x86-64.so.2 /bin/rm -la")...)
		assert.Equal(t, Deny, r.Decision)
	})
}

func TestMultiCall(t *testing.T) {
	p := compileRules(t, Allow, "deny reboot", "deny rm -rf")
	tests := []struct {
		name string
		argv string
		want Decision
	}{
		{"applet by argv0", "reboot", Deny},
		{"applet by argv0 path", "/sbin/reboot -f", Deny},
		{"busybox argv0 names applet in argv1", "busybox reboot", Deny},
		{"busybox.static", "busybox.static rm -rf /", Deny},
		{"other applet", "ls -la", Allow},
		{"argv0 chooses the applet", "ls reboot", Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := p.Decide(&Exec{Argv: fields(tc.argv), Path: "/bin/busybox", Resolved: "/bin/busybox"})
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}

	t.Run("busybox identity does not match every applet", func(t *testing.T) {
		fs := newFakeFiles()
		bb := FileID{Dev: 1, Ino: 10, Size: 800000}
		for _, n := range []string{"busybox", "reboot", "rm", "ls"} {
			fs.add(n, bb)
		}
		p := p.WithFiles(fs)
		// /bin/ls is a symlink the supervisor did not resolve.
		r := p.Decide(&Exec{Argv: fields("ls -la"), Path: "/bin/ls", Resolved: "/bin/ls", File: bb, Known: true})
		assert.Equal(t, Allow, r.Decision, r.RuleText())
		r = p.Decide(&Exec{Argv: fields("reboot"), Path: "/bin/x", Resolved: "/tmp/x", File: bb, Known: true})
		assert.Equal(t, Deny, r.Decision, r.RuleText())
	})
}

func TestPythonModule(t *testing.T) {
	p := compileRules(t, Allow, "deny pip install", "deny python3 -c")
	tests := []struct {
		name string
		argv string
		want Decision
	}{
		{"-m pip", "python3 -m pip install x", Deny},
		{"-m pip3 alias", "python -m pip list", Allow},
		{"-mpip attached", "python3.12 -mpip install x", Deny},
		{"-Im cluster", "python3 -Im pip install x", Deny},
		{"options first", "python3 -u -W ignore -X dev -m pip install x", Deny},
		{"submodule", "python3 -m pip._internal install x", Deny},
		{"script", "python3 pip install x", Allow},
		{"code", "python3 -c print(1)", Deny},
		{"-c before -m", "python3 -c x -m pip install", Deny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := decideArgv(p, fields(tc.argv)...)
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}
}

func TestIdentity(t *testing.T) {
	git := FileID{Dev: 1, Ino: 100, Size: 4000000, MtimeNs: 1}
	gitSum := [32]byte{1}
	newFiles := func() *fakeFiles {
		fs := newFakeFiles()
		fs.add("git", git)
		fs.add("git", FileID{Dev: 1, Ino: 101, Size: 3000000}) // a second git later on PATH
		fs.sums[git] = gitSum
		return fs
	}
	p := compileRules(t, Allow, "deny git push")

	tests := []struct {
		name string
		exec Exec
		want Decision
	}{
		{"symlink resolved to git", Exec{Argv: fields("g push"), Path: "./g", Resolved: "/usr/bin/git", File: git, Known: true}, Deny},
		{"hard link under another name", Exec{Argv: fields("g push"), Path: "./g", Resolved: "/home/u/g", File: git, Known: true}, Deny},
		{"second PATH entry", Exec{Argv: fields("g push"), Path: "./g", Resolved: "/home/u/g", File: FileID{Dev: 1, Ino: 101, Size: 3000000}, Known: true}, Deny},
		{"renamed copy, same content", Exec{Argv: fields("g push"), Path: "./g", Resolved: "/tmp/g", File: FileID{Dev: 2, Ino: 7, Size: git.Size}, Known: true}, Deny},
		{"same size, other content", Exec{Argv: fields("g push"), Path: "./g", Resolved: "/tmp/h", File: FileID{Dev: 2, Ino: 8, Size: git.Size}, Known: true}, Allow},
		{"other file", Exec{Argv: fields("g push"), Path: "./g", Resolved: "/tmp/ls", File: FileID{Dev: 2, Ino: 9, Size: 10}, Known: true}, Allow},
		{"same size, content unreadable: git's denials apply", Exec{Argv: fields("g push"), Path: "./g", Resolved: "/tmp/u", File: FileID{Dev: 2, Ino: 10, Size: git.Size}, Known: true}, Deny},
		{"same size, content unreadable, not a denied subcommand", Exec{Argv: fields("g status"), Path: "./g", Resolved: "/tmp/u", File: FileID{Dev: 2, Ino: 10, Size: git.Size}, Known: true}, Allow},
		{"unknown file", Exec{Argv: fields("g push"), Path: "./g", Resolved: "/home/u/g", File: git}, Allow},
		{"identity and subcommand", Exec{Argv: fields("g status"), Path: "./g", Resolved: "/home/u/g", File: git, Known: true}, Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFiles()
			fs.sums[FileID{Dev: 2, Ino: 7, Size: git.Size}] = gitSum
			fs.sums[FileID{Dev: 2, Ino: 8, Size: git.Size}] = [32]byte{2}
			got := p.WithFiles(fs).Decide(&tc.exec)
			assert.Equal(t, tc.want, got.Decision, got.RuleText())
		})
	}

	t.Run("content unreadable is never an allow", func(t *testing.T) {
		// A file of git's size whose content Digest cannot read (too large,
		// unreadable, on a filesystem whose reads need not be what runs)
		// is git for its deny and ask rules only: fail closed both ways.
		fs := newFiles()
		unknown := FileID{Dev: 2, Ino: 10, Size: git.Size}
		pf := compileRules(t, Deny, "allow git status").WithFiles(fs)
		r := pf.Decide(&Exec{Argv: fields("g status"), Path: "./g", Resolved: "/tmp/u", File: unknown, Known: true})
		assert.Equal(t, Deny, r.Decision, r.RuleText())
		fs.sums[unknown] = gitSum
		r = pf.Decide(&Exec{Argv: fields("g status"), Path: "./g", Resolved: "/tmp/u", File: unknown, Known: true})
		assert.Equal(t, Allow, r.Decision, "a copy whose content was read: %s", r.RuleText())
		// git's own digest unreadable: as unknown.
		delete(fs.sums, git)
		r = p.WithFiles(fs).Decide(&Exec{Argv: fields("g push"), Path: "./g", Resolved: "/tmp/u", File: unknown, Known: true})
		assert.Equal(t, Deny, r.Decision, r.RuleText())
	})

	t.Run("without Files names only", func(t *testing.T) {
		r := p.Decide(&Exec{Argv: fields("g push"), Path: "./g", Resolved: "/home/u/g", File: git, Known: true})
		assert.Equal(t, Allow, r.Decision)
	})

	t.Run("hashing is lazy", func(t *testing.T) {
		fs := newFiles()
		pf := p.WithFiles(fs)
		// Decided by name: no digest.
		pf.Decide(&Exec{Argv: fields("git push"), Path: "/usr/bin/git", Resolved: "/usr/bin/git", File: git, Known: true})
		assert.Zero(t, fs.digests)
		// Same inode under another name: no digest.
		pf.Decide(&Exec{Argv: fields("g push"), Path: "g", Resolved: "/x/g", File: git, Known: true})
		assert.Zero(t, fs.digests)
		// Different size from every git: no digest.
		pf.Decide(&Exec{Argv: fields("g push"), Path: "g", Resolved: "/x/g", File: FileID{Dev: 3, Ino: 3, Size: 5}, Known: true})
		assert.Zero(t, fs.digests)
		// Same size: the exec's file and git's are hashed once each.
		other := FileID{Dev: 3, Ino: 4, Size: git.Size}
		fs.sums[other] = [32]byte{3}
		pf.Decide(&Exec{Argv: fields("g push"), Path: "g", Resolved: "/x/g", File: other, Known: true})
		assert.Equal(t, 2, fs.digests)
	})

	t.Run("lookups only when they could change the decision", func(t *testing.T) {
		fs := newFiles()
		pf := compileRules(t, Allow, "deny git push", "deny ls").WithFiles(fs)
		r := pf.Decide(&Exec{Argv: fields("ls"), Path: "/bin/ls", Resolved: "/bin/ls", File: FileID{Dev: 9, Ino: 9}, Known: true})
		assert.Equal(t, Deny, r.Decision)
	})

	t.Run("renamed loader", func(t *testing.T) {
		fs := newFiles()
		ld := FileID{Dev: 1, Ino: 50, Size: 200000}
		fs.add("/lib*/ld-*.so*", ld)
		r := p.WithFiles(fs).Decide(&Exec{Argv: fields("x /usr/bin/git push"), Path: "/tmp/x", Resolved: "/tmp/x", File: ld, Known: true})
		assert.Equal(t, Deny, r.Decision)
	})

	t.Run("path rule by identity", func(t *testing.T) {
		fs := newFiles()
		tool := FileID{Dev: 1, Ino: 70, Size: 1234}
		fs.add("/opt/x/tool", tool)
		pp := compileRules(t, Allow, "deny /opt/x/tool").WithFiles(fs)
		r := pp.Decide(&Exec{Argv: fields("t"), Path: "/tmp/t", Resolved: "/tmp/t", File: tool, Known: true})
		assert.Equal(t, Deny, r.Decision)
	})
}

func TestPrograms(t *testing.T) {
	p := compileRules(t, Allow, "deny git push", "deny {docker,podman} run", "deny mkfs.*", "deny /opt/x/tool", "deny pip install", "deny * --evil")
	got := p.Programs()
	for _, want := range []string{"git", "docker", "podman", "mkfs.*", "/opt/x/tool", "pip", "pip3", "busybox", "toybox", "systemctl", "/lib*/ld-*.so*"} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "*")
	assert.IsNonDecreasing(t, got)
}

func TestRulesAndBuiltins(t *testing.T) {
	p, err := Compile(Config{Builtins: true, Rules: []Rule{{Decision: Deny, Pattern: "git push"}}})
	require.NoError(t, err)
	rules := p.Rules()
	require.Len(t, rules, len(Builtin())+1)
	assert.Equal(t, "builtin", rules[0].Source)
	assert.Equal(t, "git push", rules[len(rules)-1].Pattern)
	rules[0].Pattern = "changed"
	assert.NotEqual(t, "changed", p.Rules()[0].Pattern, "Rules returns a copy")
}

func TestLongArgv(t *testing.T) {
	p := compileRules(t, Allow, "deny git push --force")
	argv := []string{"git", "push"}
	for i := 0; i < 100; i++ {
		argv = append(argv, "ref")
	}
	argv = append(argv, "--force")
	assert.Equal(t, Deny, decideArgv(p, argv...).Decision)
	assert.Equal(t, Allow, decideArgv(p, argv[:len(argv)-1]...).Decision)
}

func TestEmptyArgv(t *testing.T) {
	p := compileRules(t, Allow, "deny git", "deny ld.so")
	assert.Equal(t, Deny, p.Decide(&Exec{Path: "/usr/bin/git", Resolved: "/usr/bin/git"}).Decision)
	assert.Equal(t, Allow, p.Decide(&Exec{}).Decision)
	assert.Equal(t, Deny, p.Decide(&Exec{Resolved: "/lib/ld.so"}).Decision)
}

func TestDecideDoesNotAllocate(t *testing.T) {
	p, err := Compile(Config{Builtins: true, Rules: benchRules(100)})
	require.NoError(t, err)
	e := &Exec{Argv: benchArgv, Path: "/usr/bin/git", Resolved: "/usr/bin/git"}
	allocs := testing.AllocsPerRun(100, func() { p.Decide(e) })
	assert.Zero(t, allocs)
}

func TestDecideConcurrent(t *testing.T) {
	fs := newFakeFiles()
	git := FileID{Dev: 1, Ino: 100, Size: 10}
	fs.add("git", git)
	p := compileRules(t, Allow, "deny git push", "ask npm publish", "allow ls").WithFiles(fs)
	execs := []*Exec{
		{Argv: fields("g push"), Path: "g", Resolved: "/x/g", File: git, Known: true},
		{Argv: fields("npm publ"), Path: "npm", Resolved: "/usr/bin/npm"},
		{Argv: fields("ls -la"), Path: "ls", Resolved: "/bin/ls"},
	}
	want := []Decision{Deny, Ask, Allow}
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				k := (g + i) % len(execs)
				if got := p.Decide(execs[k]).Decision; got != want[k] {
					t.Errorf("exec %d: got %s, want %s", k, got, want[k])
					return
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}

// resolvingFiles is fakeFiles that resolves a loader's program (Resolver).
type resolvingFiles struct {
	*fakeFiles
	res map[string]Exec
}

func (r *resolvingFiles) Resolve(path string) (Exec, bool) {
	e, ok := r.res[path]
	return e, ok
}

// A program the dynamic loader maps itself (ld.so PROG) is not pinned
// while it runs as the kernel's image is: a copy of git run so is git for
// git's deny rules, never for its allows; git itself (its inode) is git.
func TestLoaderProgramByContentNeverAllows(t *testing.T) {
	git := FileID{Dev: 1, Ino: 100, Size: 4000000}
	ld := FileID{Dev: 1, Ino: 50, Size: 200000}
	cp := FileID{Dev: 2, Ino: 7, Size: git.Size}
	fs := &resolvingFiles{fakeFiles: newFakeFiles(), res: map[string]Exec{
		"/ro/g":        {Path: "/ro/g", Resolved: "/ro/g", File: cp, Known: true},
		"/usr/bin/git": {Path: "/usr/bin/git", Resolved: "/usr/bin/git", File: git, Known: true},
	}}
	fs.add("git", git)
	fs.add("/lib*/ld-*.so*", ld)
	fs.sums[git], fs.sums[cp] = [32]byte{1}, [32]byte{1}
	loader := func(argv string) *Exec {
		return &Exec{Argv: fields("/lib64/ld-linux-x86-64.so.2 " + argv), Path: "/lib64/ld-linux-x86-64.so.2",
			Resolved: "/lib64/ld-linux-x86-64.so.2", File: ld, Known: true}
	}

	allow := compileRules(t, Deny, "allow git status").WithFiles(fs)
	r := allow.Decide(loader("/ro/g status"))
	assert.Equal(t, Deny, r.Decision, "a copy of git run by the loader was allowed as git: %s", r.RuleText())
	r = allow.Decide(loader("/usr/bin/git status"))
	assert.Equal(t, Allow, r.Decision, "git itself through the loader: %s", r.RuleText())
	// Exec'd directly, the copy is the kernel's image: git by its content.
	r = allow.Decide(&Exec{Argv: fields("/ro/g status"), Path: "/ro/g", Resolved: "/ro/g", File: cp, Known: true})
	assert.Equal(t, Allow, r.Decision, r.RuleText())

	deny := compileRules(t, Allow, "deny git push").WithFiles(fs)
	r = deny.Decide(loader("/ro/g push"))
	assert.Equal(t, Deny, r.Decision, "git's denial must still apply: %s", r.RuleText())
}
