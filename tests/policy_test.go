package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitWorld is a working directory with a fake git (a script that prints
// "git ran: ARGS") in dir/bin, and the environment that puts it first on
// PATH. XDG_CONFIG_HOME points at an empty directory, so a user's own
// ~/.config/cordon/policy.yaml cannot change what the tests see.
type gitWorld struct {
	dir, bin string
	env      []string
}

func newGitWorld(t *testing.T) gitWorld {
	t.Helper()
	dir := fakeProgram(t, "git")
	bin := filepath.Join(dir, "bin")
	return gitWorld{dir: dir, bin: bin, env: []string{
		"PATH=" + bin + ":" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + t.TempDir(),
	}}
}

// newGitWorldVouched is newGitWorld with the fake git's bin where the
// sandbox sees it read-only, for tests whose allow rules name git (or
// another program put in bin): a program in the working directory's bin is
// one the sandbox could have put on its PATH, which meets deny and ask
// rules only.
func newGitWorldVouched(t *testing.T) gitWorld {
	t.Helper()
	w := newGitWorld(t)
	w.bin = fakeProgramVouched(t, "git")
	w.env[0] = "PATH=" + w.bin + ":" + os.Getenv("PATH")
	return w
}

func (w gitWorld) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCordon(t, runOpts{dir: w.dir, env: w.env}, args...)
}

// writeFile writes content to dir/name, creating parent directories.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// denyPushFile is a policy file denying git push with a message that says
// which file it is.
func denyPushFile(message string) string {
	return "rules:\n  - deny: git push\n    message: " + message + "\n"
}

func TestPolicyDiscovery(t *testing.T) {
	requireSeccompNotify(t)
	root := t.TempDir()
	// root/cordon.yaml sits above both repositories: never found from inside.
	writeFile(t, root, "cordon.yaml", denyPushFile("from above the repository"))
	writeFile(t, root, "repo/.git/HEAD", "ref: refs/heads/main\n")
	writeFile(t, root, "repo/.cordon.yaml", denyPushFile("from the repository root"))
	writeFile(t, root, "repo/sub/cordon.yaml", denyPushFile("from the current directory"))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "repo/sub/deeper/still"), 0o755))
	writeFile(t, root, "bare/.git/HEAD", "ref: refs/heads/main\n")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bare/sub"), 0o755))
	flagFile := writeFile(t, root, "flag.yaml", denyPushFile("from --policy"))
	xdg := t.TempDir()
	writeFile(t, xdg, "cordon/policy.yaml", denyPushFile("from XDG_CONFIG_HOME"))
	emptyXDG := t.TempDir()
	// Discovered files decide a run once trusted.
	r := runCordon(t, runOpts{}, "policy", "trust", filepath.Join(root, "cordon.yaml"), filepath.Join(root, "repo/.cordon.yaml"),
		filepath.Join(root, "repo/sub/cordon.yaml"), filepath.Join(xdg, "cordon/policy.yaml"))
	require.Equal(t, 0, r.code, r.stderr)
	// bare is a repository root with no policy file beneath the trusted
	// root/cordon.yaml: it is refused until accepted as such (a workload
	// can make any directory it writes a repository root).
	r = runCordon(t, runOpts{dir: filepath.Join(root, "bare/sub"), env: []string{"XDG_CONFIG_HOME=" + emptyXDG}}, "--", "true")
	require.Equal(t, 125, r.code, r.stderr)
	require.Contains(t, r.stderr, "hides "+filepath.Join(root, "cordon.yaml"))
	r = runCordon(t, runOpts{dir: filepath.Join(root, "bare"), env: []string{"XDG_CONFIG_HOME=" + emptyXDG}}, "policy", "trust")
	require.Equal(t, 0, r.code, r.stderr)

	tests := []struct {
		name    string
		dir     string // under root
		xdg     string
		args    []string
		message string // expected in the denial line; "" = allowed (built-in default)
	}{
		{"current directory", "repo/sub", emptyXDG, nil, "from the current directory"},
		{"parent up to the repository root", "repo/sub/deeper/still", emptyXDG, nil, "from the current directory"},
		{"repository root, dot name", "repo", emptyXDG, nil, "from the repository root"},
		{"not above the repository root", "bare/sub", emptyXDG, nil, ""},
		{"XDG_CONFIG_HOME when no project file", "bare/sub", xdg, nil, "from XDG_CONFIG_HOME"},
		{"project file before XDG", "repo", xdg, nil, "from the repository root"},
		{"--policy wins", "repo/sub", xdg, []string{"--policy", flagFile}, "from --policy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The sandbox sees only the working directory of the host's
			// /tmp: the fake git lives under it.
			bin := filepath.Join(root, tc.dir, "bin")
			require.NoError(t, os.MkdirAll(bin, 0o755))
			writeScript(t, bin, "git", `echo "git ran: $*"`)
			env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + tc.xdg}
			args := append(append([]string{"--debug"}, tc.args...), "--", "git", "push", "origin", "main")
			r := runCordon(t, runOpts{dir: filepath.Join(root, tc.dir), env: env}, args...)
			if tc.message == "" {
				assert.Equal(t, 0, r.code, r.stderr)
				assert.Contains(t, r.stdout, "git ran: push origin main")
				assert.Contains(t, r.stderr, `from="built-in default"`, "--debug names the policy used")
				return
			}
			assert.Equal(t, 126, r.code, r.stderr)
			assert.NotContains(t, r.stdout, "git ran")
			assert.Contains(t, r.stderr, `cordon: denied: git push origin main (rule: deny "git push": `+tc.message+")")
		})
	}
}

func TestPolicyFileErrors(t *testing.T) {
	requireSeccompNotify(t)
	tests := []struct {
		name, file, want string
	}{
		{"unknown key", "rules:\n  - deny: git push\n    mesage: typo\n", `p.yaml:3: rule 1: unknown key "mesage"`},
		{"bad decision", "default: maybe\n", `p.yaml:1: default: unknown decision "maybe"`},
		{"YAML syntax", "rules:\n  - deny: [git, push\n", "p.yaml:"},
		{"bad pattern", "rules:\n  - allow: ls\n  - deny: \"git {push\"\n", "p.yaml:3: rule 2:"},
		{"failing example", "rules:\n  - deny: git\nexamples:\n  - allow: git log --grep push\n",
			`p.yaml:4: example git log --grep push: got deny (deny "git"), want allow`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gw := newGitWorld(t)
			writeFile(t, gw.dir, "p.yaml", tc.file)
			r := gw.run(t, "--policy", "p.yaml", "--", "sh", "-c", "echo ran")
			assert.Equal(t, 125, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stdout, "ran", "nothing runs under a policy that does not load")
			// Discovered, it is the same error: from "cordon policy
			// trust", which refuses a file that does not parse, or from
			// the run once it is trusted.
			require.NoError(t, os.Rename(filepath.Join(gw.dir, "p.yaml"), filepath.Join(gw.dir, "cordon.yaml")))
			writeFile(t, gw.dir, ".git/HEAD", "")
			r = gw.run(t, "policy", "trust")
			if r.code == 0 {
				r = gw.run(t, "--", "sh", "-c", "echo ran")
			}
			assert.Equal(t, 125, r.code, r.stderr)
			assert.Contains(t, r.stderr, filepath.Join(gw.dir, "cordon.yaml")+":")
			assert.NotContains(t, r.stdout, "ran")
		})
	}
	gw := newGitWorld(t)
	r := gw.run(t, "--policy", "missing.yaml", "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "missing.yaml")
}

func TestFlagsAddToPolicyFile(t *testing.T) {
	requireSeccompNotify(t)
	gw := newGitWorldVouched(t)
	writeFile(t, gw.dir, "p.yaml", "default: deny\ndefaults: true\nrules:\n"+
		"  - allow: [sh]\n  - allow: git {status,push}\n  - deny: git push\n    message: open a pull request instead\n")
	tests := []struct {
		name   string
		args   []string
		script string
		denied string // the denial line, or "" when the script must run
	}{
		{"file rule and its message", nil, "git push origin main",
			`cordon: denied: git push origin main (rule: deny "git push": open a pull request instead)`},
		{"file default", nil, "git log", `cordon: denied: git log (rule: default deny)`},
		{"file allow", nil, "git status", ""},
		{"--deny adds a rule", []string{"--deny", "git status"}, "git status",
			`cordon: denied: git status (rule: deny "git status")`},
		{"--allow adds a rule", []string{"--allow", "git log"}, "git log", ""},
		{"--allow does not override a file deny", []string{"--allow", "git push"}, "git push origin main",
			`(rule: deny "git push": open a pull request instead)`},
		{"--default overrides the file's", []string{"--default", "allow"}, "git log", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"--policy", "p.yaml"}, tc.args...), "--", "sh", "-c", tc.script)
			r := gw.run(t, args...)
			if tc.denied == "" {
				assert.Equal(t, 0, r.code, r.stderr)
				assert.Contains(t, r.stdout, "git ran: ")
				return
			}
			assert.NotEqual(t, 0, r.code)
			assert.NotContains(t, r.stdout, "git ran")
			assert.Contains(t, r.stderr, tc.denied)
		})
	}
}

func TestPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "p.yaml", "rules:\n  - deny: git push\n    message: open a pull request instead\n  - ask: npm publish\n")
	writeFile(t, dir, "nodefaults.yaml", "defaults: false\n")
	writeFile(t, dir, "allowlist.yaml", "default: deny\nrules:\n  - allow: ls\n")
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"deny", []string{"--policy", "p.yaml", "--", "git", "-C", ".", "push", "origin", "main"}, 1,
			"deny: git -C . push origin main (rule: deny \"git push\": open a pull request instead)\n  from p.yaml:2\n"},
		{"allow by default", []string{"--policy", "p.yaml", "--", "git", "log", "--grep", "push"}, 0,
			"allow: git log --grep push (rule: default allow)\n  from p.yaml\n"},
		{"ask", []string{"--policy", "p.yaml", "--", "npm", "publish"}, 2, "ask: npm publish (rule: ask \"npm publish\")\n"},
		{"flag rule", []string{"--policy", "p.yaml", "--deny", "rm -r", "--", "rm", "-rf", "build"}, 1,
			"deny: rm -rf build (rule: deny \"rm -r\")\n  from --deny\n"},
		{"built-in deny list", []string{"--", "reboot"}, 1, "(rule: deny \"{shutdown,reboot,halt,poweroff}\": powers off"},
		{"--no-defaults", []string{"--no-defaults", "--", "reboot"}, 0, "allow: reboot (rule: default allow)"},
		{"file defaults: false", []string{"--policy", "nodefaults.yaml", "--", "reboot"}, 0, "allow: reboot"},
		{"--no-defaults=false overrides the file", []string{"--policy", "nodefaults.yaml", "--no-defaults=false", "--", "reboot"}, 1, "deny: reboot"},
		{"file default deny", []string{"--policy", "allowlist.yaml", "--", "cat"}, 1, "deny: cat (rule: default deny)\n  from allowlist.yaml\n"},
		{"--default overrides the file", []string{"--policy", "allowlist.yaml", "--default", "ask", "--", "cat"}, 2, "ask: cat (rule: default ask)\n  from --default\n"},
		{"path rule", []string{"--deny", "/opt/*/bin/*", "--", "/opt/x/bin/tool"}, 1, "deny: /opt/x/bin/tool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCordon(t, runOpts{dir: dir, env: env}, append([]string{"policy", "check"}, tc.args...)...)
			assert.Equal(t, tc.code, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, tc.out)
		})
	}
	r := runCordon(t, runOpts{dir: dir, env: env}, "policy", "check", "--policy", "missing.yaml", "--", "ls")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "missing.yaml")
}

func TestPolicyTest(t *testing.T) {
	dir := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	writeFile(t, dir, "good.yaml", `rules:
  - deny: git push
  - ask: npm publish
examples:
  - deny: [git, -C, ., push, origin, main]
  - allow: git log --grep push
  - ask: npm publish
`)
	writeFile(t, dir, "bad.yaml", `rules:
  - deny: git push
examples:
  - deny: git push
  - allow: git push --dry-run
  - deny: git pull
  - allow: git status
`)
	r := runCordon(t, runOpts{dir: dir, env: env}, "policy", "test", "--policy", "good.yaml")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `PASS  deny: git -C . push origin main  (good.yaml:5)
PASS  allow: git log --grep push  (good.yaml:6)
PASS  ask: npm publish  (good.yaml:7)
all 3 examples hold in good.yaml
`, r.stdout)

	// Every example is reported, not only the first failure.
	r = runCordon(t, runOpts{dir: dir, env: env}, "policy", "test", "--policy", "bad.yaml")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Equal(t, `PASS  deny: git push  (bad.yaml:4)
FAIL  allow: git push --dry-run  (bad.yaml:5)
      got deny (rule: deny "git push")
FAIL  deny: git pull  (bad.yaml:6)
      got allow (rule: default allow)
PASS  allow: git status  (bad.yaml:7)
2 of 4 examples failed in bad.yaml
`, r.stdout)

	// Discovered like a run would; the built-in default has no examples.
	writeFile(t, dir, "repo/.git/HEAD", "")
	writeFile(t, dir, "repo/cordon.yaml", "examples:\n  - deny: reboot\n")
	r = runCordon(t, runOpts{dir: filepath.Join(dir, "repo"), env: env}, "policy", "test")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "PASS  deny: reboot  ("+filepath.Join(dir, "repo", "cordon.yaml")+":2)")
	writeFile(t, dir, "norepo/.git/HEAD", "")
	r = runCordon(t, runOpts{dir: filepath.Join(dir, "norepo"), env: env}, "policy", "test")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "no examples in built-in default\n", r.stdout)

	writeFile(t, dir, "broken.yaml", "rules:\n  - deny: git push\n    bogus: 1\n")
	r = runCordon(t, runOpts{dir: dir, env: env}, "policy", "test", "--policy", "broken.yaml")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `broken.yaml:3: rule 1: unknown key "bogus"`)
}

func TestPolicyShow(t *testing.T) {
	dir := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	writeFile(t, dir, "p.yaml", "default: deny\ndefaults: false\nrules:\n  - allow: ls\n  - deny: git push\n    message: no pushing\n")
	r := runCordon(t, runOpts{dir: dir, env: env}, "policy", "show", "--policy", "p.yaml", "--deny", "npm publish", "--no-defaults=false")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "policy:   p.yaml (flag)\n")
	assert.Contains(t, r.stdout, "default:  deny (from p.yaml)\n")
	assert.Contains(t, r.stdout, "built-in deny list: on (from --no-defaults)\n")
	assert.Regexp(t, `(?m)^  builtin +deny +\{shutdown,reboot,halt,poweroff\}  # powers off`, r.stdout)
	assert.Regexp(t, `(?m)^  p\.yaml:4 +allow +ls$`, r.stdout)
	assert.Regexp(t, `(?m)^  p\.yaml:5 +deny +git push  # no pushing$`, r.stdout)
	assert.Regexp(t, `(?m)^  --deny +deny +npm publish$`, r.stdout)
	assert.Less(t, strings.Index(r.stdout, "builtin"), strings.Index(r.stdout, "p.yaml:4"), "evaluation order")
	assert.Less(t, strings.Index(r.stdout, "p.yaml:5"), strings.Index(r.stdout, "--deny"), "flag rules come after the file's")

	r = runCordon(t, runOpts{dir: dir, env: env}, "policy", "show", "--policy", "p.yaml", "--default", "allow", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var shown struct {
		File, Origin, Default, DefaultFrom string
		Builtins                           bool
		Rules                              []struct{ Decision, Pattern, Message, Source string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown), r.stdout)
	assert.Equal(t, "p.yaml", shown.File)
	assert.Equal(t, "flag", shown.Origin)
	assert.Equal(t, "allow", shown.Default)
	assert.False(t, shown.Builtins)
	require.Len(t, shown.Rules, 2)
	assert.Equal(t, "git push", shown.Rules[1].Pattern)
	assert.Equal(t, "no pushing", shown.Rules[1].Message)
	assert.Equal(t, "p.yaml:5", shown.Rules[1].Source)

	// Nothing found: the built-in default.
	writeFile(t, dir, "repo/.git/HEAD", "")
	r = runCordon(t, runOpts{dir: filepath.Join(dir, "repo"), env: env}, "policy", "show")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "policy:   built-in default\n")
	assert.Contains(t, r.stdout, "default:  allow (from built-in default)\n")
}

func TestFencePolicy(t *testing.T) {
	requireSeccompNotify(t)
	gw := newGitWorldVouched(t)
	writeFile(t, gw.dir, "fence.json", `{
  // a fence config, comments and all
  "network": {"allowedDomains": ["github.com"]},
  "command": {
    "deny": ["git push"],
    "allow": ["git push origin feature"],
    "useDefaults": true,
  },
}
`)
	r := gw.run(t, "--policy", "fence.json", "--", "sh", "-c", "git push origin main")
	assert.NotEqual(t, 0, r.code)
	assert.NotContains(t, r.stdout, "git ran")
	assert.Contains(t, r.stderr, `cordon: denied: git push origin main (rule: deny "git push")`)
	// fence's network section is enforced: github.com on 80 and 443, nothing else.
	assert.NotContains(t, r.stderr, `fence key "network" is ignored`)

	// fence's allow entries override its deny entries.
	r = gw.run(t, "--policy", "fence.json", "--", "sh", "-c", "git push origin feature")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "git ran: push origin feature")

	r = gw.run(t, "policy", "show", "--policy", "fence.json")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `(?m)^  fence\.json:6 +allow \(override\) +git push origin feature$`, r.stdout)
	assert.Regexp(t, `(?m)^  fence\.json:3 +allow +github\.com +ports 80,443$`, r.stdout)
}

func TestAskAnswers(t *testing.T) {
	requireSeccompNotify(t)
	dir := fakeProgram(t, "npm")
	writeFile(t, dir, "p.yaml", "rules:\n  - ask: npm publish\n")
	env := []string{"PATH=" + filepath.Join(dir, "bin") + ":" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + t.TempDir()}
	denial := `cordon: denied: npm publish (rule: ask "npm publish")`
	tests := []struct {
		name    string
		args    []string
		allowed bool
		stderr  string
	}{
		{"default is deny", nil, false, denial},
		{"--ask deny", []string{"--ask", "deny"}, false, denial},
		{"--ask allow", []string{"--ask", "allow"}, true, ""},
		// No terminal at all (stdin is a pipe, no controlling tty): deny,
		// and say why.
		{"--ask tty without a terminal", []string{"--ask", "tty"}, false, "cordon: warning: --ask tty: no terminal to ask on"},
		{"--default ask", []string{"--default", "ask", "--ask", "allow"}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"--policy", "p.yaml"}, tc.args...), "--", "bash", "-c", "npm publish; echo rc=$?")
			r := runCordon(t, runOpts{dir: dir, env: env}, args...)
			assert.Equal(t, 0, r.code, r.stderr)
			if tc.allowed {
				assert.Contains(t, r.stdout, "npm ran: publish")
				assert.Contains(t, r.stdout, "rc=0")
			} else {
				assert.NotContains(t, r.stdout, "npm ran")
				assert.Contains(t, r.stdout, "rc=126")
				assert.Contains(t, r.stderr, denial)
			}
			assert.Contains(t, r.stderr, tc.stderr)
		})
	}
	r := runCordon(t, runOpts{dir: dir, env: env}, "--ask", "maybe", "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `--ask: unknown mode "maybe"`)
}

func TestAskOnTerminal(t *testing.T) {
	requireSeccompNotify(t)
	dir := fakeProgram(t, "npm")
	writeFile(t, dir, "p.yaml", "rules:\n  - ask: npm publish\n")
	prompt := `cordon: allow? npm publish (rule: ask "npm publish") [y/N] `

	tm := startTerm(t, dir, "bash", "--norc", "--noprofile", "-i")
	tm.expect("PROMPT$ ")
	tm.send("export PATH=" + filepath.Join(dir, "bin") + ":$PATH XDG_CONFIG_HOME=" + t.TempDir() + "\n")
	tm.expect("PROMPT$ ")

	// y: it runs, and the command has the terminal again afterwards (it
	// reads a line from it without being stopped by SIGTTIN).
	tm.send("cordon --ask tty --policy p.yaml -- bash -c 'npm publish; echo rc=$?; read x; echo got=$x'\n")
	tm.expect(prompt)
	tm.send("y\n")
	tm.expect("npm ran: publish")
	tm.expect("rc=0")
	tm.send("hello\n")
	tm.expect("got=hello")
	tm.expect("PROMPT$ ")

	// n: denied, with the denial line; the command sees EPERM.
	tm.send("cordon --ask tty --policy p.yaml -- bash -c 'npm publish; echo rc=$?'\n")
	tm.expect(prompt)
	tm.send("n\n")
	tm.expect(`cordon: denied: npm publish (rule: ask "npm publish")`)
	tm.expect("rc=126")
	tm.expect("PROMPT$ ")

	// No answer within --ask-timeout: denied.
	start := time.Now()
	tm.send("cordon --ask tty --ask-timeout 1s --policy p.yaml -- bash -c 'npm publish; echo rc=$?'\n")
	tm.expect(prompt)
	tm.expect("cordon: no answer within 1s: denied")
	tm.expect("rc=126")
	tm.expect("PROMPT$ ")
	assert.Less(t, time.Since(start), 8*time.Second)

	// The prompt never reads the command's stdin: a "y" piped into the
	// command is not an answer; the terminal's "n" is.
	tm.send("echo y | cordon --ask tty --policy p.yaml -- bash -c 'npm publish; echo rc=$?; cat'\n")
	tm.expect(prompt)
	tm.send("n\n")
	tm.expect("rc=126")
	tm.expect("y\r\n")
	tm.expect("PROMPT$ ")

	// The outer shell has its terminal back, in canonical mode.
	tm.send("stty -a | grep -o -- '-\\?icanon'; echo done-$((1+1))\n")
	out := tm.expect("done-2")
	assert.NotContains(t, out, "-icanon")
	tm.send("exit\n")
	tm.wait()
}

// sidestepCase is a way to run a denied command line that should still be
// caught.
type sidestepCase struct {
	name   string
	rule   string // the deny rule; "git push" when empty
	script string // run with bash -c in a gitWorld
	// denied is the argv shown in the denial line; "" means the script must
	// run (the rule must not match).
	denied string
	needs  string // a tool the case needs
	setup  func(t *testing.T, w gitWorld)
	// deniedBy, when set, is the rule the denial line names instead of the
	// case's rule: a built-in one that refuses the script with or without
	// it (the control run is then refused by it too).
	deniedBy string
}

func runSidesteps(t *testing.T, tests []sidestepCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs != "" {
				requireTool(t, tc.needs)
			}
			gw := newGitWorld(t)
			if tc.setup != nil {
				tc.setup(t, gw)
			}
			rule := tc.rule
			if rule == "" {
				rule = "git push"
			}
			writeFile(t, gw.dir, "p.yaml", "rules:\n  - deny: "+rule+"\n")
			// The control: without the rule, the script runs the fake git
			// (or is refused by the built-in rule alone).
			control := gw.run(t, "--deny", "git commit", "--", "bash", "-c", tc.script)
			if tc.deniedBy != "" {
				require.NotContains(t, control.stdout, "ran:", "control run: %s", control.stderr)
				require.Contains(t, control.stderr, `(rule: deny "`+tc.deniedBy+`"`, "control run")
				rule = tc.deniedBy
			} else {
				require.Equal(t, 0, control.code, "control run: %s", control.stderr)
				require.Contains(t, control.stdout, "ran:", "control run: %s", control.stderr)
			}
			for _, via := range [][]string{{"--deny", rule}, {"--policy", "p.yaml"}} {
				r := gw.run(t, append(via, "--", "bash", "-c", tc.script)...)
				if tc.denied == "" {
					assert.Equal(t, 0, r.code, "%v: %s", via, r.stderr)
					assert.Contains(t, r.stdout, "ran:", "%v", via)
					assert.NotContains(t, r.stderr, "cordon: denied", "%v", via)
					continue
				}
				assert.NotContains(t, r.stdout, "ran:", "%v: the denied program must not start", via)
				// How the denial line shows the program (argv[0] or the
				// resolved path) is the supervisor's business; the argv and
				// the rule must be there.
				assert.Regexp(t, `cordon: denied: .*`+regexp.QuoteMeta(tc.denied)+`.* \(rule: deny "`+regexp.QuoteMeta(rule)+`"[):]`, r.stderr, "%v", via)
			}
		})
	}
}

func TestPolicySidesteps(t *testing.T) {
	requireSeccompNotify(t)
	runSidesteps(t, []sidestepCase{
		{name: "plain", script: "git push origin main", denied: "git push origin main"},
		{name: "global -C before the subcommand", script: "git -C . push origin main", denied: "git -C . push origin main"},
		{name: "global -c k=v", script: "git -c k=v push", denied: "git -c k=v push"},
		{name: "global --git-dir=x", script: "git --git-dir=x push", denied: "git --git-dir=x push"},
		{name: "global --no-pager", script: "git --no-pager push", denied: "git --no-pager push"},
		{name: "subcommand word as an option value", script: "git log --grep push"},
		{name: "option after positional words", rule: "git push --force",
			script: "git push origin main --force", denied: "git push origin main --force"},
		{name: "option rule, option absent", rule: "git push --force", script: "git push origin main"},
		{name: "argv[0] spoofing with exec -a", script: "exec -a ls git push origin main", denied: "push origin main"},
		{name: "env", script: "env git push origin main", denied: "git push origin main"},
		{name: "sh -c", script: "sh -c 'git push origin main'", denied: "git push origin main"},
		{name: "bash -c", script: "bash -c 'git push origin main'", denied: "git push origin main"},
		{name: "xargs", script: "echo push origin main | xargs git", denied: "git push origin main"},
		{name: "find -exec", script: `find bin -name git -exec {} push origin main \;`, denied: "bin/git push origin main"},
		{name: "make", needs: "make", script: "make -s", denied: "git push origin main",
			setup: func(t *testing.T, w gitWorld) { writeFile(t, w.dir, "Makefile", "all:\n\tgit push origin main\n") }},
		{name: "python os.execv", needs: "python3",
			script: `python3 -c 'import os, shutil; os.execv(shutil.which("git"), ["git", "push", "origin", "main"])'`,
			denied: "git push origin main"},
	})
}

// TestIdentitySidesteps covers programs run under another name or through
// the dynamic loader: these need the supervisor to tell the policy which
// file is being executed (program identity by inode and content).
func TestIdentitySidesteps(t *testing.T) {
	requireSeccompNotify(t)
	// A fake git that is an ELF program (a copy of echo, so "ran:" goes
	// last in its arguments), for the loader, which cannot run a script.
	elfGit := func(t *testing.T, w gitWorld) {
		echo, err := os.ReadFile("/bin/echo")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(w.bin, "git"), echo, 0o755))
	}
	const loader = "/lib64/ld-linux-x86-64.so.2"
	runSidesteps(t, []sidestepCase{
		{name: "symlink", script: "./g push origin main", denied: "./g push origin main",
			setup: func(t *testing.T, w gitWorld) {
				require.NoError(t, os.Symlink(filepath.Join(w.bin, "git"), filepath.Join(w.dir, "g")))
			}},
		{name: "hard link", script: "./h push origin main", denied: "./h push origin main",
			setup: func(t *testing.T, w gitWorld) {
				require.NoError(t, os.Link(filepath.Join(w.bin, "git"), filepath.Join(w.dir, "h")))
			}},
		{name: "renamed copy", script: "./tool push origin main", denied: "./tool push origin main",
			setup: func(t *testing.T, w gitWorld) {
				copyFile(t, filepath.Join(w.bin, "git"), filepath.Join(w.dir, "tool"), 0o755)
			}},
		{name: "copy made inside the sandbox", script: `cp "$(command -v git)" ./t2 && ./t2 push origin main`,
			denied: "./t2 push origin main"},
		// The loader's program is never exec'd itself, and the loader
		// opens it after the check: one on a writable path (all of these)
		// could be swapped by then, so it is refused whatever the rules
		// say. One on read-only mounts is resolved in the caller's view
		// and judged by identity (TestAdvLoaderRunsRenamedCopy).
		{name: "dynamic loader", script: loader + " ./bin/git push origin main ran:",
			denied: loader + " ./bin/git push origin main ran:", setup: elfGit, deniedBy: "ld.so PROGRAM"},
		{name: "dynamic loader running a renamed copy",
			script: loader + " ./prog push origin main ran:", denied: loader + " ./prog push origin main ran:",
			setup: func(t *testing.T, w gitWorld) {
				elfGit(t, w)
				copyFile(t, filepath.Join(w.bin, "git"), filepath.Join(w.dir, "prog"), 0o755)
			}, deniedBy: "ld.so PROGRAM"},
		{name: "renamed copy of the loader",
			script: "./myld ./bin/git push origin main ran:", denied: "./myld ./bin/git push origin main ran:",
			setup: func(t *testing.T, w gitWorld) {
				elfGit(t, w)
				copyFile(t, loader, filepath.Join(w.dir, "myld"), 0o755)
			}, deniedBy: "ld.so PROGRAM"},
	})
}

func TestPolicyHelp(t *testing.T) {
	for _, args := range [][]string{{"policy", "--help"}, {"policy", "check", "--help"}, {"policy", "test", "--help"}, {"policy", "show", "--help"}} {
		r := cordon(t, args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "Example", "%v has an example", args)
	}
	r := cordon(t, "policy", "check", "--help")
	assert.Contains(t, r.stdout, "by name only", "check says it decides without file identity")
	r = cordon(t, "run", "--help")
	for _, flag := range []string{"--policy", "--ask", "--ask-timeout"} {
		assert.Contains(t, r.stdout, flag)
	}
}

// A YAML mistake is reported at the line it is on (the YAML library names
// the line its enclosing block began on), and a policy mistake never
// suggests cordon doctor: the host is fine.
func TestPolicyMistakesPointAtTheLine(t *testing.T) {
	requireSeccompNotify(t)
	tests := []struct {
		name, file, want string
	}{
		{"indent on line 3", "rules:\n  - deny: git push\n   - allow: ls\n", `p.yaml:3: did not find expected '-' indicator: "   - allow: ls"`},
		{"key out of its rule on line 4", "default: allow\nrules:\n  - deny: git push\n  message: x\n", `p.yaml:4: did not find expected '-' indicator: "  message: x"`},
		{"unclosed list on line 3", "rules:\n  - deny: git push\n  - deny: [git, push\n", `p.yaml:3: did not find expected ',' or ']': "  - deny: [git, push"`},
		{"tab on line 3", "default: deny\nrules:\n\t- deny: git\n", `p.yaml:3: found character that cannot start any token: "\t- deny: git"`},
		{"after a multi-line list", "rules:\n  - deny: [git,\n      push]\n  - deny: x\n   - bad\n", `p.yaml:5: did not find expected '-' indicator: "   - bad"`},
		{"unknown key", "rules:\n  - deny: git push\n    mesage: typo\n", `p.yaml:3: rule 1: unknown key "mesage"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gw := newGitWorld(t)
			writeFile(t, gw.dir, "p.yaml", tc.file)
			r := runCordon(t, runOpts{dir: gw.dir, env: gw.env, timeout: startBound}, "--policy", "p.yaml", "--", "true")
			assert.Equal(t, 125, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stderr, "doctor")
			assert.NotContains(t, r.stderr, "--help")
		})
	}
	// A typo in a rule flag is how cordon was called: --help, not doctor.
	r := runCordon(t, runOpts{timeout: startBound}, "--deny", "git {push", "--", "true")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, `--deny: deny "git {push"`)
	assert.NotContains(t, r.stderr, "doctor")
}
