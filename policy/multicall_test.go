package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMultiCallLeadingDash(t *testing.T) {
	// Login shells are started with argv[0] "-sh": busybox and toybox strip
	// the dash before looking the applet up.
	denyReboot := compileRules(t, Allow, "deny reboot")
	allowLs := compileRules(t, Deny, "allow ls", "allow busybox --help")
	tests := []struct {
		name, argv, prog string
		p                *Policy
		want             Decision
	}{
		{"dash applet", "-reboot", "/bin/busybox", denyReboot, Deny},
		{"dash applet path", "-/sbin/reboot -f", "/bin/busybox", denyReboot, Deny},
		{"dash applet after busybox", "busybox -reboot", "/bin/busybox", denyReboot, Deny},
		{"dash busybox", "-busybox reboot", "/bin/busybox", denyReboot, Deny},
		{"toybox dash applet", "-reboot", "/usr/bin/toybox", denyReboot, Deny},
		{"dash allowed applet", "-ls -la", "/bin/busybox", allowLs, Allow},
		{"dash is not the binary itself", "-reboot --help", "/bin/busybox", allowLs, Deny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.p.Decide(&Exec{Argv: fields(tc.argv), Path: tc.prog, Resolved: tc.prog})
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}
	t.Run("called as", func(t *testing.T) {
		// A symlink named -reboot to busybox, argv[0] chosen otherwise.
		r := denyReboot.Decide(&Exec{Argv: fields("ls"), Path: "/tmp/-reboot", Resolved: "/bin/busybox"})
		assert.Equal(t, Deny, r.Decision, r.RuleText())
	})
}

func TestUnwrapLimitFailsClosed(t *testing.T) {
	p := compileRules(t, Allow, "deny git push")
	nest := func(wrapper string, n int, cmd string) []string {
		return fields(strings.Repeat(wrapper+" ", n) + cmd)
	}
	tests := []struct {
		name string
		argv []string
		want Decision
		deep bool
	}{
		{"loaders below the limit", nest("/lib64/ld-linux-x86-64.so.2", 3, "/usr/bin/git status"), Allow, false},
		{"loaders past the limit", nest("/lib64/ld-linux-x86-64.so.2", 20, "/usr/bin/git push"), Deny, true},
		{"loaders past the limit, harmless target", nest("/lib64/ld-linux-x86-64.so.2", 20, "/bin/ls"), Deny, true},
		{"busybox below the limit", nest("busybox", 3, "ls"), Allow, false},
		{"busybox past the limit", nest("busybox", 20, "reboot"), Deny, true},
		{"mixed past the limit", append(nest("/lib64/ld-linux-x86-64.so.2", 5, "/bin/busybox"), nest("busybox", 10, "ls")...), Deny, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := p.Decide(&Exec{Argv: tc.argv, Path: tc.argv[0], Resolved: tc.argv[0]})
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
			if tc.deep {
				require.NotNil(t, r.Rule)
				assert.Equal(t, &UnwrapRule, r.Rule)
				assert.Contains(t, r.RuleText(), "too many wrapper levels")
			}
		})
	}
	t.Run("overrides do not lift it", func(t *testing.T) {
		p, err := Compile(Config{Rules: []Rule{{Decision: Allow, Pattern: "*", Override: true}}})
		require.NoError(t, err)
		argv := nest("busybox", 20, "ls")
		assert.Equal(t, Deny, decideArgv(p, argv...).Decision)
	})
}

// systemdFiles is a host where reboot, poweroff, halt and shutdown are
// symlinks to systemctl, and git is an ordinary program.
func systemdFiles() (*fakeFiles, FileID, FileID) {
	fs := newFakeFiles()
	sc := FileID{Dev: 1, Ino: 30, Size: 300000}
	git := FileID{Dev: 1, Ino: 40, Size: 400000}
	bb := FileID{Dev: 1, Ino: 50, Size: 500000}
	for _, n := range []string{"systemctl", "reboot", "poweroff", "halt", "shutdown", "telinit", "runlevel", "/usr/sbin/reboot"} {
		fs.add(n, sc)
	}
	fs.add("git", git)
	fs.add("busybox", bb)
	fs.sums[sc] = [32]byte{3}
	fs.sums[git] = [32]byte{4}
	fs.sums[bb] = [32]byte{5}
	return fs, sc, git
}

func TestMultiCallIdentity(t *testing.T) {
	fs, sc, git := systemdFiles()
	bb := FileID{Dev: 1, Ino: 50, Size: 500000}
	scCopy := FileID{Dev: 2, Ino: 1, Size: sc.Size}
	gitCopy := FileID{Dev: 2, Ino: 2, Size: git.Size}
	bbCopy := FileID{Dev: 2, Ino: 3, Size: bb.Size}
	fs.sums[scCopy], fs.sums[gitCopy], fs.sums[bbCopy] = fs.sums[sc], fs.sums[git], fs.sums[bb]

	p, err := Compile(Config{Default: Allow, Builtins: true, Rules: []Rule{
		{Decision: Deny, Pattern: "git push"},
		{Decision: Deny, Pattern: "/usr/sbin/reboot --force"},
	}})
	require.NoError(t, err)
	p = p.WithFiles(fs)

	const systemctl = "/usr/bin/systemctl"
	tests := []struct {
		name     string
		argv     string
		path     string
		resolved string
		file     FileID
		want     Decision
	}{
		{"systemctl --version", "systemctl --version", systemctl, systemctl, sc, Allow},
		{"systemctl status", "systemctl status sshd", systemctl, systemctl, sc, Allow},
		{"systemctl by path argv0", "/usr/bin/systemctl is-active x", systemctl, systemctl, sc, Allow},
		{"systemctl reboot", "systemctl reboot", systemctl, systemctl, sc, Deny},
		{"systemctl poweroff", "systemctl --no-block poweroff", systemctl, systemctl, sc, Deny},
		{"reboot symlink", "reboot", "/usr/sbin/reboot", systemctl, sc, Deny},
		{"reboot symlink with options", "reboot -f", "/usr/sbin/reboot", systemctl, sc, Deny},
		{"poweroff symlink", "poweroff", "/usr/sbin/poweroff", systemctl, sc, Deny},
		{"halt symlink", "halt", "/usr/sbin/halt", systemctl, sc, Deny},
		{"shutdown symlink", "shutdown -h now", "/usr/sbin/shutdown", systemctl, sc, Deny},
		{"telinit symlink", "telinit 6", "/usr/sbin/telinit", systemctl, sc, Deny},
		{"runlevel is harmless", "runlevel", "/usr/sbin/runlevel", systemctl, sc, Allow},
		{"dash argv0", "-reboot", systemctl, systemctl, sc, Deny},
		{"argv0 chooses reboot", "reboot", systemctl, systemctl, sc, Deny},
		{"systemctl matches argv0 by substring", "my-reboot-tool", systemctl, systemctl, sc, Deny},
		{"reboot symlink called as systemctl", "systemctl --version", "/usr/sbin/reboot", systemctl, sc, Deny},
		{"path rule on the symlink", "systemctl --force", "/usr/sbin/reboot", systemctl, sc, Deny},
		{"path rule does not follow to systemctl", "systemctl --force", systemctl, systemctl, sc, Allow},
		{"argv0 spoof keeps systemctl", "ls reboot", systemctl, systemctl, sc, Deny},
		{"argv0 spoof harmless", "ls status", systemctl, systemctl, sc, Allow},
		{"hard link under another name", "x --version", "/tmp/x", "/tmp/x", sc, Allow},
		{"hard link runs reboot", "reboot", "/tmp/x", "/tmp/x", sc, Deny},
		{"renamed copy named reboot", "reboot", "/tmp/reboot", "/tmp/reboot", scCopy, Deny},
		{"renamed copy named reboot, argv0 systemctl", "systemctl --version", "/tmp/reboot", "/tmp/reboot", scCopy, Deny},
		{"renamed copy, argv0 reboot", "reboot", "/tmp/x", "/tmp/x", scCopy, Deny},
		{"renamed copy, argv0 harmless", "x --version", "/tmp/x", "/tmp/x", scCopy, Allow},
		{"git named systemctl", "ls push", "/tmp/systemctl", "/tmp/systemctl", gitCopy, Deny},
		{"git named busybox", "ls push", "/tmp/busybox", "/tmp/busybox", gitCopy, Deny},
		{"git argv0 reboot", "reboot status", "/usr/bin/git", "/usr/bin/git", git, Allow},
		{"git argv0 reboot push", "reboot push", "/usr/bin/git", "/usr/bin/git", git, Deny},
		{"busybox copy named ls runs reboot", "reboot", "/tmp/ls", "/tmp/ls", bbCopy, Deny},
		{"busybox copy runs ls", "ls", "/tmp/x", "/tmp/x", bbCopy, Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := p.Decide(&Exec{Argv: fields(tc.argv), Path: tc.path, Resolved: tc.resolved, File: tc.file, Known: true})
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}
}

func TestMultiCallAllowlist(t *testing.T) {
	fs, sc, _ := systemdFiles()
	bb := FileID{Dev: 1, Ino: 50, Size: 500000}
	other := FileID{Dev: 3, Ino: 9, Size: 77}
	p := compileRules(t, Deny, "allow systemctl status", "allow ls", "allow busybox --help").WithFiles(fs)
	tests := []struct {
		name           string
		argv           string
		path, resolved string
		file           FileID
		want           Decision
	}{
		{"allowed subcommand", "systemctl status", "/usr/bin/systemctl", "/usr/bin/systemctl", sc, Allow},
		// systemctl started as reboot is reboot: an allow rule for
		// systemctl does not allow it.
		{"argv0 reboot", "reboot status", "/usr/bin/systemctl", "/usr/bin/systemctl", sc, Deny},
		{"busybox applet allowed", "ls -la", "/bin/ls", "/bin/busybox", bb, Allow},
		{"busybox help allowed", "busybox --help", "/bin/busybox", "/bin/busybox", bb, Allow},
		// Allow rules for the binary's own name do not allow an applet.
		{"busybox applet via own allow", "reboot --help", "/bin/busybox", "/bin/busybox", bb, Deny},
		// busybox renamed ls is not ls when argv[0] says reboot.
		{"busybox named ls", "reboot", "/tmp/ls", "/tmp/ls", bb, Deny},
		// A file named busybox that is not busybox: argv[0] cannot pick an
		// allowed applet.
		{"unproven busybox", "ls", "/tmp/busybox", "/tmp/busybox", other, Deny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := p.Decide(&Exec{Argv: fields(tc.argv), Path: tc.path, Resolved: tc.resolved, File: tc.file, Known: true})
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}
}

func TestLoaderArgv0MultiCall(t *testing.T) {
	// The loader's --argv0 is the argv[0] the program sees, and so picks
	// what a multi-call program runs.
	p := compileRules(t, Allow, "deny reboot", "deny git push")
	tests := []struct {
		argv string
		want Decision
	}{
		{"/lib64/ld-linux-x86-64.so.2 --argv0 reboot /usr/bin/systemctl", Deny},
		{"/lib64/ld-linux-x86-64.so.2 --argv0=reboot /usr/bin/systemctl", Deny},
		{"/lib64/ld-linux-x86-64.so.2 --argv0 -reboot /bin/busybox -f", Deny},
		{"/lib64/ld-linux-x86-64.so.2 --argv0 ls /bin/busybox", Allow},
		{"/lib64/ld-linux-x86-64.so.2 /usr/bin/systemctl --version", Allow},
		{"/lib64/ld-linux-x86-64.so.2 --argv0 git-push /usr/bin/git", Deny},
		{"/lib64/ld-linux-x86-64.so.2 --argv0 reboot /bin/ls", Allow},
	}
	for _, tc := range tests {
		t.Run(tc.argv, func(t *testing.T) {
			r := decideArgv(p, fields(tc.argv)...)
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}
}
