package tests

// Black-box tests of the policy's second edition (issue 16): strict allow
// rules, "$", meanings, ssh rules, option tables, nested shell commands in
// "cordon policy check", and the codex and fence imports, through the real
// binary.

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkCase decides argv with "cordon policy check" and expects a decision
// (the exit code) and a line of output.
type checkCase struct {
	name string
	args []string // before "--"
	argv []string
	code int
	out  string
}

func runCheckCases(t *testing.T, dir string, cases []checkCase) {
	t.Helper()
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append(append([]string{"policy", "check"}, tc.args...), "--"), tc.argv...)
			r := runCordon(t, runOpts{dir: dir, env: env}, args...)
			assert.Equal(t, tc.code, r.code, "%s\n%s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, tc.out)
		})
	}
}

func TestPolicy2Check(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "strict.yaml", `default: deny
rules:
  - allow: git push origin docs
  - allow: git status ...
  - allow: printenv PATH $
  - allow: pwd $
  - allow: ls
  - allow: rg -g *.go TODO
  - deny: '@git-force-push'
programs:
  rg:
    value_options: [-g, --glob]
`)
	writeFile(t, dir, "fence.json", `{
  "command": {"deny": ["git push"], "allow": ["git push origin docs"]},
  "ssh": {"allowedHosts": ["dev-*"], "deniedHosts": ["dev-secret"], "allowedCommands": ["uptime"]}
}`)
	writeFile(t, dir, "codex.rules", `prefix_rule(pattern = ["gh", "pr", ["view", "list"]], decision = "prompt",
    match = ["gh pr view 1"], not_match = ["gh --repo x pr view 1"])
prefix_rule(pattern = ["git", "push"], decision = "forbidden")
`)
	runCheckCases(t, dir, []checkCase{
		{"strict allow", []string{"--policy", "strict.yaml"}, []string{"git", "push", "origin", "docs"}, 0, "allow: git push origin docs"},
		{"allow does not widen to options", []string{"--policy", "strict.yaml"}, []string{"git", "push", "-v", "origin", "docs"}, 1, "(rule: default deny)"},
		{"force push meaning", []string{"--policy", "strict.yaml"}, []string{"git", "push", "origin", "+docs"}, 1, `deny "@git-force-push"`},
		{"autocorrected force push", []string{"--policy", "strict.yaml"}, []string{"git", "pusj", "-f", "origin", "docs"}, 1, `deny "@git-force-push"`},
		{"... widens after", []string{"--policy", "strict.yaml"}, []string{"git", "status", "-s"}, 0, `allow "git status ..."`},
		{"... not before", []string{"--policy", "strict.yaml"}, []string{"git", "-c", "alias.status=push", "status"}, 1, "default deny"},
		{"$ exact", []string{"--policy", "strict.yaml"}, []string{"printenv", "PATH"}, 0, "allow: printenv PATH"},
		{"$ refuses more", []string{"--policy", "strict.yaml"}, []string{"printenv", "PATH", "HOME"}, 1, "default deny"},
		{"bare $", []string{"--policy", "strict.yaml"}, []string{"pwd", "-P"}, 1, "default deny"},
		{"bare program rule", []string{"--policy", "strict.yaml"}, []string{"ls", "-la", "/"}, 0, `allow "ls"`},
		{"option table value", []string{"--policy", "strict.yaml"}, []string{"rg", "-g", "x.go", "TODO"}, 0, "allow: rg -g x.go TODO"},
		{"option table strict", []string{"--policy", "strict.yaml"}, []string{"rg", "-g", "x.go", "TODO", "extra"}, 1, "default deny"},

		{"builtin block device path form", nil, []string{"dd", "if=/dev/zero", "of=/dev//sda"}, 1, `deny "@block-device-write"`},
		{"builtin privileged container", nil, []string{"docker", "container", "run", "--privileged", "alpine"}, 1, `deny "@privileged-container"`},
		{"builtin power target", nil, []string{"systemctl", "start", "reboot.target"}, 1, `deny "@power-off"`},
		{"builtin busctl power off", nil, strings.Fields("busctl call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager PowerOff b false"), 1, `deny "@power-off"`},
		{"runpy pip", []string{"--deny", "pip install"}, strings.Fields("python3 -m runpy pip install x"), 1, `deny "pip install"`},

		{"ssh host rule", []string{"--deny", "ssh prod-*"}, []string{"ssh", "-p", "22", "admin@prod-db", "uptime"}, 1, `deny "ssh prod-*"`},
		{"ssh jump host", []string{"--deny", "ssh prod-*"}, []string{"ssh", "-J", "prod-bastion", "dev-1"}, 1, `deny "ssh prod-*"`},
		{"ssh remote command", []string{"--deny", "ssh * rm -rf ..."}, []string{"ssh", "dev-1", "cd / && rm -rf x"}, 1, `deny "ssh * rm -rf ..."`},
		{"scp destination", []string{"--deny", "ssh prod-*"}, []string{"scp", "f", "prod-db:/tmp"}, 1, `deny "ssh prod-*"`},
		{"rsync -e ssh destination", []string{"--deny", "ssh prod-*"}, []string{"rsync", "-e", "ssh", "-a", "x", "u@prod-db:/srv"}, 1, `deny "ssh prod-*"`},
		{"ssh other host", []string{"--deny", "ssh prod-*"}, []string{"ssh", "dev-1", "uptime"}, 0, "allow"},

		{"fence exception exact", []string{"--policy", "fence.json"}, []string{"git", "push", "origin", "docs"}, 0, "allow"},
		{"fence exception does not widen", []string{"--policy", "fence.json"}, []string{"git", "push", "--force", "origin", "docs"}, 1, `deny "git push"`},
		{"fence ssh allowed", []string{"--policy", "fence.json"}, []string{"ssh", "dev-1", "uptime"}, 0, "allow"},
		{"fence ssh denied host", []string{"--policy", "fence.json"}, []string{"ssh", "dev-secret", "uptime"}, 1, "deny"},
		{"fence ssh command not allowed", []string{"--policy", "fence.json"}, []string{"ssh", "dev-1", "reboot"}, 1, "deny"},
		{"fence defaults", []string{"--policy", "fence.json"}, []string{"nsenter", "-t", "1", "-m"}, 1, "fence default"},

		{"codex prompt", []string{"--policy", "codex.rules"}, []string{"gh", "pr", "list"}, 2, `ask "gh pr {view,list}"`},
		{"codex forbidden", []string{"--policy", "codex.rules"}, []string{"git", "push"}, 1, `deny "git push"`},

		{"nested shell", []string{"--deny", "git push"}, []string{"bash", "-c", "ls && git push; $X"}, 1, `deny: git push (rule: deny "git push")`},
		{"nested shell, backslashes removed", []string{"--deny", "git push"}, []string{"bash", "-c", `\git pu\sh`}, 1, `deny: git push (rule: deny "git push")`},
		{"nested shell dynamic", nil, []string{"sh", "-c", "ls; $X run"}, 0, `at exec time: "$X run"`},
	})
}

// TestPolicy2TestHint: "cordon policy test" says when an example failed
// because allow rules now match strictly.
func TestPolicy2TestHint(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "p.yaml", "default: deny\nrules:\n  - allow: git log\nexamples:\n  - allow: git log --oneline\n")
	r := runCordon(t, runOpts{dir: dir, env: []string{"XDG_CONFIG_HOME=" + t.TempDir()}}, "policy", "test", "--policy", "p.yaml")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "FAIL  allow: git log --oneline")
	assert.Contains(t, r.stdout, `allow rules now match strictly: allow "git log" (p.yaml:3)`)
	assert.Contains(t, r.stdout, `write "git log ..."`)
}

// TestPolicy2Run: the second edition decides real execs in a real sandbox,
// one-shot and in a daemon session (which gets the policy as a document).
func TestPolicy2Run(t *testing.T) {
	requireSeccompNotify(t)
	gw := newGitWorldVouched(t)
	writeScript(t, gw.bin, "ssh", `echo "ssh ran: $*"`)
	writeScript(t, gw.bin, "mytool", `echo "mytool ran: $*"`)
	writeFile(t, gw.dir, "p.yaml", `default: deny
rules:
  - allow: [sh]
  - allow: git status $
  - allow: git push origin docs ...
  - deny: '@git-force-push'
  - allow: ssh [options] dev-* $
  - allow: mytool --profile dev deploy
programs:
  mytool:
    global_options: [--profile]
`)
	tests := []struct {
		script string
		denied string // the denial line, or "" when it must run
	}{
		{"git status", ""},
		{"git status -s", `cordon: denied: git status -s (rule: default deny)`},
		{"git push origin docs", ""},
		{"git push origin docs --force", `cordon: denied: git push origin docs --force (rule: deny "@git-force-push")`},
		{"git push origin +docs", `(rule: deny "@git-force-push")`},
		{"git pusj origin docs -f", `(rule: deny "@git-force-push")`},
		{"git -c remote.origin.push=+refs/heads/docs push origin docs", `(rule: deny "@git-force-push")`},
		{"ssh -p 22 dev-1", ""},
		{"ssh -J prod dev-1", `cordon: denied: ssh -J prod dev-1 (rule: default deny)`},
		{"ssh dev-1 uptime", `(rule: default deny)`},
		{"mytool --profile dev deploy", ""},
		{"mytool --profile prod deploy", `(rule: default deny)`},
	}
	for _, tc := range tests {
		t.Run(tc.script, func(t *testing.T) {
			r := gw.run(t, "--policy", "p.yaml", "--", "sh", "-c", tc.script)
			prog := strings.Fields(tc.script)[0]
			if tc.denied == "" {
				assert.Equal(t, 0, r.code, r.stderr)
				assert.Contains(t, r.stdout, prog+" ran: ")
				return
			}
			assert.NotEqual(t, 0, r.code)
			assert.NotContains(t, r.stdout, prog+" ran")
			assert.Contains(t, r.stderr, tc.denied)
		})
	}

	// A daemon session takes the same file: rules, meanings and the
	// option table travel in the policy document.
	d := newDaemonEnv(t)
	work := gw.dir
	in := func(args ...string) result {
		t.Helper()
		return d.cordonOpts(runOpts{dir: work, env: gw.env}, args...)
	}
	r := in("session", "create", "--name", "p2", "--policy", "p.yaml")
	require.Equal(t, 0, r.code, r.stderr)
	for _, tc := range tests {
		r := in("exec", "--session", "p2", "--", "sh", "-c", "PATH="+gw.bin+":$PATH; "+tc.script)
		prog := strings.Fields(tc.script)[0]
		if tc.denied == "" {
			assert.Equal(t, 0, r.code, "%s: %s", tc.script, r.stderr)
			assert.Contains(t, r.stdout, prog+" ran: ", tc.script)
			continue
		}
		assert.NotContains(t, r.stdout, prog+" ran", tc.script)
		assert.Contains(t, r.stderr, tc.denied, tc.script)
	}
}

// TestPolicy2RunImports: a codex rules file and a fence config with an ssh
// section decide real execs.
func TestPolicy2RunImports(t *testing.T) {
	requireSeccompNotify(t)
	gw := newGitWorldVouched(t)
	writeScript(t, gw.bin, "ssh", `echo "ssh ran: $*"`)
	writeFile(t, gw.dir, "codex.rules", `prefix_rule(pattern = ["git", ["push", "fetch"]], decision = "forbidden",
    justification = "no network from here", match = ["git push origin main"], not_match = ["git status"])
`)
	writeFile(t, gw.dir, "fence.json", `{"ssh": {"allowedHosts": ["dev-*"], "allowedCommands": ["uptime"]}}`)
	tests := []struct {
		policy, script, denied string
	}{
		{"codex.rules", "git status", ""},
		{"codex.rules", "git -C . push origin main", `cordon: denied: git -C . push origin main (rule: deny "git {push,fetch}": no network from here)`},
		{"fence.json", "ssh dev-1 uptime", ""},
		{"fence.json", "ssh dev-1 'uptime; reboot'", `(rule: deny "ssh"`},
		{"fence.json", "ssh prod-1 uptime", `(rule: deny "ssh"`},
	}
	for _, tc := range tests {
		t.Run(tc.policy+" "+tc.script, func(t *testing.T) {
			r := gw.run(t, "--policy", tc.policy, "--", "sh", "-c", tc.script)
			prog := strings.Fields(tc.script)[0]
			if tc.denied == "" {
				assert.Equal(t, 0, r.code, r.stderr)
				assert.Contains(t, r.stdout, prog+" ran: ")
				return
			}
			assert.NotEqual(t, 0, r.code)
			assert.NotContains(t, r.stdout, prog+" ran")
			assert.Contains(t, r.stderr, tc.denied)
		})
	}
}

// TestReadmePolicyExample: the policy file the README shows under Format
// loads and its examples hold.
func TestReadmePolicyExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	s := string(readme)
	i := strings.Index(s, "### Format")
	require.GreaterOrEqual(t, i, 0)
	j := strings.Index(s[i:], "```yaml\n")
	require.GreaterOrEqual(t, j, 0)
	body := s[i+j+len("```yaml\n"):]
	body = body[:strings.Index(body, "```")]
	dir := t.TempDir()
	writeFile(t, dir, "p.yaml", body)
	r := runCordon(t, runOpts{dir: dir, env: []string{"XDG_CONFIG_HOME=" + t.TempDir()}}, "policy", "test", "--policy", "p.yaml")
	assert.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "all 7 examples hold")
}
