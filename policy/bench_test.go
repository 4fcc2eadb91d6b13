package policy

import (
	"fmt"
	"testing"
)

// benchArgv is a realistic git command line: global options before the
// subcommand, positional words and options after it.
var benchArgv = []string{"git", "-C", "/work/repo", "-c", "core.pager=cat", "push", "origin",
	"feature/x", "--force-with-lease", "--no-verify"}

// benchPattern returns the i-th rule pattern for program prog. The mix
// covers subcommands, options, globs, alternatives, "..." and KEY= tests.
// None matches benchArgv, so Decide evaluates every candidate rule and
// cannot stop early at a deny.
func benchPattern(prog string, i int) string {
	sub := []string{"push", "pull", "fetch", "commit", "reset", "rebase", "merge", "tag", "branch", "remote",
		"stash", "clean", "checkout", "switch", "restore", "log", "diff", "show", "config", "gc"}[i%20]
	switch i % 5 {
	case 0:
		return fmt.Sprintf("%s %s --dry-run", prog, sub)
	case 1:
		return fmt.Sprintf("%s %s --opt%d", prog, sub, i)
	case 2:
		return fmt.Sprintf("%s %s origin branch%d/*", prog, sub, i)
	case 3:
		return fmt.Sprintf("%s %s {remote%d,x%d} ... y", prog, sub, i, i)
	}
	return fmt.Sprintf("%s %s key%d=", prog, sub, i)
}

// benchRules returns n rules over n/10 programs (at least one), git among
// them: the shape of a large real policy, where one program has a tenth of
// the rules.
func benchRules(n int) []Rule {
	progs := n / 10
	if progs < 1 {
		progs = 1
	}
	rules := make([]Rule, n)
	for i := range rules {
		prog := "git"
		if k := i % progs; k != 0 {
			prog = fmt.Sprintf("tool%d", k)
		}
		d := Allow
		if i%2 == 0 {
			d = Deny
		}
		rules[i] = Rule{Decision: d, Pattern: benchPattern(prog, i/progs), Source: "bench"}
	}
	return rules
}

// oneProgramRules returns n rules that all name git, spread over 20
// subcommands: the worst case for the per-program index (the subcommand
// index still applies: 1/20 of the rules name push).
func oneProgramRules(n int) []Rule {
	rules := make([]Rule, n)
	for i := range rules {
		d := Allow
		if i%2 == 0 {
			d = Deny
		}
		rules[i] = Rule{Decision: d, Pattern: benchPattern("git", i), Source: "bench"}
	}
	return rules
}

func benchDecide(b *testing.B, rules []Rule, e *Exec, f Files) {
	p, err := Compile(Config{Default: Allow, Builtins: true, Rules: rules})
	if err != nil {
		b.Fatal(err)
	}
	if f != nil {
		p = p.WithFiles(f)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(e)
	}
}

// BenchmarkDecide decides one git command line against policies of 10, 100
// and 1,000 rules (plus the built-ins).
func BenchmarkDecide(b *testing.B) {
	e := &Exec{Argv: benchArgv, Path: "/usr/bin/git", Resolved: "/usr/bin/git"}
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) { benchDecide(b, benchRules(n), e, nil) })
	}
}

// BenchmarkDecideOneProgram is BenchmarkDecide with every rule naming git.
func BenchmarkDecideOneProgram(b *testing.B) {
	e := &Exec{Argv: benchArgv, Path: "/usr/bin/git", Resolved: "/usr/bin/git"}
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) { benchDecide(b, oneProgramRules(n), e, nil) })
	}
}

// BenchmarkDecideFiles decides an exec with a known file against policies
// whose programs all have PATH entries: with nothing matched by name, every
// program that could deny is looked up (inode comparison; sizes differ, so
// nothing is hashed).
func BenchmarkDecideFiles(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			rules := benchRules(n)
			fs := newFakeFiles()
			for i, name := range programsOf(rules) {
				fs.add(name, FileID{Dev: 1, Ino: uint64(100 + i), Size: int64(1000 + i)})
			}
			e := &Exec{Argv: []string{"ls", "-la"}, Path: "/usr/bin/ls", Resolved: "/usr/bin/ls",
				File: FileID{Dev: 1, Ino: 7, Size: 99}, Known: true}
			benchDecide(b, rules, e, fs)
		})
	}
}

// BenchmarkCompile compiles 1,000 rules (plus the built-ins).
func BenchmarkCompile(b *testing.B) {
	rules := benchRules(1000)
	b.Run("rules=1000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compile(Config{Default: Allow, Builtins: true, Rules: rules}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// programsOf returns the names Programs reports for a policy of rules.
func programsOf(rules []Rule) []string {
	p, err := Compile(Config{Rules: rules})
	if err != nil {
		panic(err)
	}
	return p.Programs()
}

// BenchmarkDecideSecondEdition decides against 1,000 rules of one program
// with the built-in meanings on: an ordinary command line, one whose
// subcommand git's autocorrect would have to guess (every candidate within
// git's similarity floor is decided), and an ssh line with a remote command.
func BenchmarkDecideSecondEdition(b *testing.B) {
	rules := append(oneProgramRules(1000), Rule{Decision: Deny, Pattern: "@git-force-push"},
		Rule{Decision: Deny, Pattern: "ssh prod-* rm -rf ..."}, Rule{Decision: Allow, Pattern: "ssh [options] dev-* $"})
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"git", benchArgv},
		{"git-autocorrect", []string{"git", "-C", "/work/repo", "pusj", "origin", "feature/x", "--no-verify"}},
		{"ssh", []string{"ssh", "-p", "22", "-J", "jump", "dev-1", "cd /srv && rm -rf build"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchDecide(b, rules, &Exec{Argv: tc.argv, Path: "/usr/bin/" + tc.argv[0], Resolved: "/usr/bin/" + tc.argv[0]}, nil)
		})
	}
}
