package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVouchedIdentity: a file the sandbox put on its PATH under a name (a
// copy of python named ls in a writable directory, or a symlink to it)
// stands for the name in deny rules, never in allow rules or as proof of a
// multi-call program; the real ls is still ls.
func TestVouchedIdentity(t *testing.T) {
	ls := FileID{Dev: 1, Ino: 10, Size: 100}
	python := FileID{Dev: 2, Ino: 20, Size: 200}
	busybox := FileID{Dev: 1, Ino: 30, Size: 300}
	fs := &vouchingFiles{fakeFiles: newFakeFiles(), planted: map[FileID]bool{python: true}}
	fs.add("ls", ls)
	fs.add("ls", python) // ./venv/bin/ls -> python
	fs.add("busybox", python)
	fs.add("busybox", busybox)
	fs.sums[python] = [32]byte{7}

	allow := compileRules(t, Deny, "allow ls ...").WithFiles(fs)
	tests := []struct {
		name string
		exec Exec
		want Decision
	}{
		{"the real ls", Exec{Argv: fields("ls -l"), Path: "ls", Resolved: "/usr/bin/ls", File: ls, Known: true}, Allow},
		{"python planted as ls", Exec{Argv: fields("ls -c x"), Path: "ls", Resolved: "/w/venv/bin/ls", File: python, Known: true}, Deny},
		{"python run by its own name", Exec{Argv: fields("python3 -c x"), Path: "python3", Resolved: "/usr/bin/python3", File: python, Known: true}, Deny},
		{"a copy of the planted ls", Exec{Argv: fields("x -c x"), Path: "./x", Resolved: "/w/x", File: FileID{Dev: 3, Ino: 1, Size: 200}, Known: true}, Deny},
	}
	fs.sums[FileID{Dev: 3, Ino: 1, Size: 200}] = [32]byte{7}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := allow.Decide(&tc.exec)
			assert.Equal(t, tc.want, got.Decision, got.RuleText())
		})
	}

	t.Run("deny rules still see it", func(t *testing.T) {
		p := compileRules(t, Allow, "deny ls").WithFiles(fs)
		r := p.Decide(&Exec{Argv: fields("python3"), Path: "python3", Resolved: "/usr/bin/python3", File: python, Known: true})
		assert.Equal(t, Deny, r.Decision)
	})

	t.Run("no multi-call proof", func(t *testing.T) {
		// python planted as busybox, started as "ls": not busybox's ls.
		r := allow.Decide(&Exec{Argv: fields("ls -c x"), Path: "/w/bin/busybox", Resolved: "/w/bin/busybox", File: python, Known: true})
		assert.Equal(t, Deny, r.Decision, r.RuleText())
		// The real busybox started as ls is ls.
		r = allow.Decide(&Exec{Argv: fields("ls -l"), Path: "/bin/busybox", Resolved: "/bin/busybox", File: busybox, Known: true})
		assert.Equal(t, Allow, r.Decision, r.RuleText())
	})

	t.Run("without Vouching every file counts", func(t *testing.T) {
		r := compileRules(t, Deny, "allow ls ...").WithFiles(fs.fakeFiles).Decide(
			&Exec{Argv: fields("ls -c x"), Path: "ls", Resolved: "/w/venv/bin/ls", File: python, Known: true})
		assert.Equal(t, Allow, r.Decision)
	})
}

// TestWrappersMustBeProven: a program that only looks like a wrapper (named
// python3 or like the dynamic loader, in a place the sandbox could have
// put it) cannot borrow the allow of what it says it runs, and python -m
// MOD never gets MOD's allow: python finds MOD in the working directory
// first (a planted ls.py). Denials still apply through both.
func TestWrappersMustBeProven(t *testing.T) {
	python := FileID{Dev: 1, Ino: 20, Size: 200}
	loader := FileID{Dev: 1, Ino: 30, Size: 300}
	planted := FileID{Dev: 2, Ino: 40, Size: 400}
	ls := FileID{Dev: 1, Ino: 10, Size: 100}
	fs := &vouchingFiles{fakeFiles: newFakeFiles(), planted: map[FileID]bool{}}
	fs.add("ls", ls)
	for _, n := range []string{"python3", "python", "python3.*"} {
		fs.add(n, python)
	}
	for _, n := range loaderPaths {
		fs.add(n, loader)
	}
	allow := compileRules(t, Deny, "allow ls ...").WithFiles(fs)
	for _, tc := range []struct {
		name string
		exec Exec
	}{
		{"planted python3 -m ls", Exec{Argv: fields("./python3 -m ls"), Path: "./python3", Resolved: "/w/python3", File: planted, Known: true}},
		{"planted loader runs ls", Exec{Argv: fields("./ld-linux-x86-64.so.2 /usr/bin/ls"), Path: "./ld-linux-x86-64.so.2", Resolved: "/w/ld-linux-x86-64.so.2", File: planted, Known: true}},
		{"the real python3 -m ls", Exec{Argv: fields("python3 -m ls"), Path: "/usr/bin/python3", Resolved: "/usr/bin/python3", File: python, Known: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := allow.Decide(&tc.exec)
			assert.Equal(t, Deny, r.Decision, r.RuleText())
		})
	}

	deny := compileRules(t, Allow, "deny pip").WithFiles(fs)
	r := deny.Decide(&Exec{Argv: fields("python3 -m pip install x"), Path: "/usr/bin/python3", Resolved: "/usr/bin/python3", File: python, Known: true})
	assert.Equal(t, Deny, r.Decision, "python -m pip still meets pip's deny rules")

	explicit := compileRules(t, Deny, "allow python3 -m pip ...").WithFiles(fs)
	r = explicit.Decide(&Exec{Argv: fields("python3 -m pip list"), Path: "/usr/bin/python3", Resolved: "/usr/bin/python3", File: python, Known: true})
	assert.Equal(t, Allow, r.Decision, "allowing python3 -m pip itself still works: %s", r.RuleText())
}

// TestKnownFileWithoutPathHasNoName: a file the supervisor identified but
// could not name (a memfd, a path longer than the kernel renders) is not
// named by the caller's path string either: "…/q/../../opt/tools/bin/gen"
// cleans to a path an allow rule names while the kernel ran another file.
// Its deny rules by the path called still apply.
func TestKnownFileWithoutPathHasNoName(t *testing.T) {
	fs := &vouchingFiles{fakeFiles: newFakeFiles(), planted: map[FileID]bool{}}
	mine := FileID{Dev: 2, Ino: 9, Size: 10}
	forged := "/w/s1/s2/q/../../../../opt/tools/bin/gen"
	p := compileRules(t, Deny, "allow /opt/tools/bin/gen", "allow /usr/bin/*").WithFiles(fs)
	for _, e := range []Exec{
		{Argv: fields("gen"), Path: forged, File: mine, Known: true},
		{Argv: fields("x"), Path: "", File: mine, Known: true},
	} {
		r := p.Decide(&e)
		assert.Equal(t, Deny, r.Decision, "%q: %s", e.Path, r.RuleText())
	}
	// Not identified at all (no Files): the name is all there is, as before.
	r := compileRules(t, Deny, "allow /opt/tools/bin/gen").Decide(&Exec{Argv: fields("gen"), Path: "/opt/tools/bin/gen"})
	assert.Equal(t, Allow, r.Decision)
	// Denials by the path called still apply to a known file without a name.
	d := compileRules(t, Allow, "deny /opt/tools/bin/gen").WithFiles(fs)
	r = d.Decide(&Exec{Argv: fields("gen"), Path: "/opt/tools/bin/gen", File: mine, Known: true})
	assert.Equal(t, Deny, r.Decision)
}

// TestGlobNamesVouchForNothing: an exec'd file named with glob characters
// ("p*", matched by allow "p?") is not looked up as a pattern standing for
// every p... program on the PATH (a copy of perl named p* then passed as
// one of them); and ld.so with --preload, --audit or --library-path never
// borrows its program's allow.
func TestGlobNamesVouchForNothing(t *testing.T) {
	perl := FileID{Dev: 1, Ino: 50, Size: 500}
	fs := &vouchingFiles{fakeFiles: newFakeFiles(), planted: map[FileID]bool{}}
	fs.add("p*", perl) // what a pattern lookup would answer
	fs.add("perl", perl)
	copyOfPerl := FileID{Dev: 2, Ino: 60, Size: 500}
	fs.sums[perl], fs.sums[copyOfPerl] = [32]byte{5}, [32]byte{5}
	p := compileRules(t, Deny, "allow p?").WithFiles(fs)
	r := p.Decide(&Exec{Argv: fields("./p* -e 1"), Path: "./p*", Resolved: "/w/p*", File: copyOfPerl, Known: true})
	assert.Equal(t, Deny, r.Decision, r.RuleText())

	loader := FileID{Dev: 1, Ino: 30, Size: 300}
	ls := FileID{Dev: 1, Ino: 10, Size: 100}
	fs.add("ls", ls)
	for _, n := range loaderPaths {
		fs.add(n, loader)
	}
	allow := compileRules(t, Deny, "allow ls ...").WithFiles(fs)
	for _, argv := range []string{
		"ld.so --preload ./x.so /usr/bin/ls",
		"ld.so --audit=./x.so /usr/bin/ls",
		"ld.so --library-path . /usr/bin/ls",
	} {
		r := allow.Decide(&Exec{Argv: fields(argv), Path: "/lib64/ld-linux-x86-64.so.2", Resolved: "/lib64/ld-linux-x86-64.so.2", File: loader, Known: true})
		assert.Equal(t, Deny, r.Decision, "%s: %s", argv, r.RuleText())
	}
	r = allow.Decide(&Exec{Argv: fields("ld.so /usr/bin/ls -l"), Path: "/lib64/ld-linux-x86-64.so.2", Resolved: "/lib64/ld-linux-x86-64.so.2", File: loader, Known: true})
	assert.Equal(t, Allow, r.Decision, "the loader running ls plainly is ls: %s", r.RuleText())
}
