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
