package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParse checks that Parse never panics and is deterministic, and that
// whatever it accepts compiles (or fails cleanly) the same way twice.
func FuzzParse(f *testing.F) {
	f.Add("cordon.yaml", issueExample)
	f.Add("fence.json", fenceConfig)
	f.Add("cordon.yaml", "rules:\n  - deny: git {push,pull} --force=*\n    message: no\nexamples:\n  - deny: git push --force=x\n")
	f.Add("cordon.json", `{"default":"deny","rules":[{"allow":["ls","-la"]}]}`)
	f.Add("cordon.yaml", "rules:\n  - &a {deny: x}\n  - *a\n  - *a\n")
	f.Add("x", "{\"command\": {\"deny\": [\"a\",], /* c */}}")
	f.Add("cordon.yaml", "rules: [{deny: \"a '\"}]")
	f.Add("cordon.yaml", "- a\n---\nb: c\n")
	f.Add("cordon.yaml", "version: 1\ndefault: ask\ndefaults: false\n")
	f.Add("cordon.yaml", "programs:\n  rg:\n    value_options: [-g]\n    global_options: [--x]\n    subcommands: true\nrules:\n  - allow: rg -g '*.go' x $\n")
	f.Add("fence.json", fenceSSHConfig)
	f.Add("cordon.yaml", "rules:\n  - deny: '@git-force-push'\n  - allow: ssh [options] dev-* $\n  - allow: ssh h ls ...\n")
	f.Fuzz(func(t *testing.T, name, data string) {
		f1, err1 := Parse(name, []byte(data))
		f2, err2 := Parse(name, []byte(data))
		require.Equal(t, err1, err2)
		require.Equal(t, f1, f2)
		if err1 != nil {
			require.Nil(t, f1)
			return
		}
		_, cerr1 := Compile(f1.Config)
		_, cerr2 := Compile(f2.Config)
		require.Equal(t, cerr1 == nil, cerr2 == nil)
		if cerr1 != nil {
			require.Equal(t, cerr1.Error(), cerr2.Error())
		}
	})
}

// FuzzDecide checks that compiling and deciding never panic and that the
// same exec always gets the same decision, with and without file identity.
// rules holds one rule per line ("deny git push"); argv is split on blanks,
// or on NUL bytes when it has any.
func FuzzDecide(f *testing.F) {
	f.Add("deny git push\nallow git push origin feature/*", "git -C . push origin main", "/usr/bin/git", true)
	f.Add("deny git push {--force,-f}", "git push -fu origin", "/usr/bin/git", false)
	f.Add("deny rm -rf /", "rm -r -f -- /", "/bin/rm", false)
	f.Add("deny dd if=\nask npm publish", "npm --registry r publ", "/usr/bin/npm", true)
	f.Add("allow tool a ... b\ndeny tool ... c", "tool a x b c", "/usr/bin/tool", false)
	f.Add("deny git push", "ld-linux-x86-64.so.2\x00--argv0\x00x\x00/usr/bin/git\x00push", "/lib64/ld-linux-x86-64.so.2", true)
	f.Add("deny reboot", "reboot -f", "/bin/busybox", true)
	f.Add("deny pip install", "python3 -Im pip install x", "/usr/bin/python3.12", false)
	f.Add("deny git push", "git-push\x00origin", "/usr/lib/git-core/git", true)
	f.Add("deny git push", "git\x00-c\x00alias.p=-C . push\x00p", "/usr/bin/git", true)
	f.Add("deny /opt/*/bin/x -v=1", "x -v 1", "/opt/a/bin/x", true)
	f.Add("deny kubectl -n prod delete", "kubectl delete -nprod pod", "/usr/bin/kubectl", true)
	f.Add("deny @git-force-push\nallow git push origin docs", "git -c remote.o.push=+x pusj origin docs", "/usr/bin/git", false)
	f.Add("deny @block-device-write\ndeny @power-off\ndeny @privileged-container", "dd of=/proc/self/root/dev//sda", "/bin/dd", true)
	f.Add("deny ssh prod-* rm -rf ...\nallow ssh [options] dev-* $\nallow ssh dev-1 ls ...", "ssh\x00-J\x00prod-x\x00dev-1\x00cd / && rm -rf x", "/usr/bin/ssh", false)
	f.Add("deny ssh prod-*", "scp -J a,b x u@[::1]:y prod-z:/w", "/usr/bin/scp", true)
	f.Add("allow printenv PATH $\nallow ls [options] src\nallow tool a ... b", "ls -la src", "/bin/ls", false)
	f.Add("deny pip install", "python3 -m runpy runpy pip install x", "/usr/bin/python3", false)
	f.Fuzz(func(t *testing.T, rules, argvText, resolved string, known bool) {
		var cfg Config
		for i, line := range strings.Split(rules, "\n") {
			d, pat, ok := strings.Cut(line, " ")
			dec, err := ParseDecision(d)
			if !ok || err != nil {
				continue
			}
			cfg.Rules = append(cfg.Rules, Rule{Decision: dec, Pattern: pat, Override: i%7 == 6, Final: i%11 == 10})
		}
		cfg.Builtins = len(rules)%2 == 0
		p, err := Compile(cfg)
		if err != nil {
			return
		}
		var argv []string
		if strings.ContainsRune(argvText, 0) {
			argv = strings.Split(argvText, "\x00")
		} else {
			argv = strings.Fields(argvText)
		}
		e := &Exec{Argv: argv, Path: resolved, Resolved: resolved,
			File: FileID{Dev: 1, Ino: uint64(len(resolved)), Size: int64(len(argvText))}, Known: known}
		r1 := p.Decide(e)
		r2 := p.Decide(e)
		assert.Equal(t, r1, r2)
		if r1.Decision == Allow && r1.Rule != nil && !hasOverride(cfg.Rules) {
			// Allow rules only got stricter than in the first edition:
			// what the second allows, the first allowed too.
			assert.Equal(t, Allow, p.FirstEdition().Decide(e).Decision)
		}
		assert.LessOrEqual(t, r1.Decision, Deny)
		if r1.Rule != nil {
			assert.Equal(t, r1.Decision, r1.Rule.Decision)
		}

		fs := newFakeFiles()
		for i, n := range p.Programs() {
			fs.add(n, FileID{Dev: 1, Ino: uint64(i), Size: int64(i)})
			fs.sums[FileID{Dev: 1, Ino: uint64(i), Size: int64(i)}] = [32]byte{byte(i % 3)}
		}
		pf := p.WithFiles(fs)
		r3 := pf.Decide(e)
		assert.Equal(t, r3, pf.Decide(e))
		if r1.Decision == Deny && r1.Rule != nil && !hasOverride(cfg.Rules) {
			// Identity only adds matches: it can never weaken a deny.
			assert.Equal(t, Deny, r3.Decision)
		}
	})
}

func hasOverride(rules []Rule) bool {
	for _, r := range rules {
		if r.Override {
			return true
		}
	}
	return false
}
