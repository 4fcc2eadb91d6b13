package tests

// Black-box tests for the red team's findings against the exec policy
// matching (issue 16 follow-up): the bypasses they ran, through the real
// binary: real git pushing to a local bare repository, real python, and
// "cordon policy check" for the ones that need a daemon or host this
// machine lacks (docker, systemd, an ssh server).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRTGitPushRun: git push spellings that pushed (findings 1-4) are
// denied in a real run, and the bare remote's branch is unchanged; a plain
// push under the same rules still goes through.
func TestRTGitPushRun(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "git")
	env := gitEnv(t)
	base, err := os.MkdirTemp("/var/tmp", "cordon-rt")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	remote := filepath.Join(base, "remote.git")
	hostGit(t, env, base, "init", "-q", "--bare", remote)
	work := filepath.Join(base, "work")
	newRepo(t, env, work)
	hostGit(t, env, work, "remote", "add", "origin", remote)
	hostGit(t, env, work, "push", "-q", "origin", "main")
	// Two commits on the remote, so that pushing main~1 is a forced update.
	require.NoError(t, os.WriteFile(filepath.Join(work, "f"), []byte("two\n"), 0o644))
	hostGit(t, env, work, "commit", "-qam", "two")
	hostGit(t, env, work, "push", "-q", "origin", "main")
	hostGit(t, env, work, "reset", "-q", "--hard", "HEAD~1")
	writeFile(t, work, "empty.yaml", "version: 1\n")
	remoteHead := func() string { return hostGit(t, env, remote, "rev-parse", "main") }
	before := remoteHead()

	tests := []struct {
		name  string
		rules []string
		argv  []string
		rule  string
	}{
		{"1 alias shadowing push", []string{"--deny", "git push"},
			[]string{"git", "-c", "alias.push=status", "push", "--force", "origin", "main"}, `deny "git push"`},
		{"1 alias shadowing push, force meaning", []string{"--deny", "@git-force-push"},
			[]string{"git", "-c", "alias.push=status", "push", "--force", "origin", "main"}, `deny "@git-force-push"`},
		{"2 --m is --mirror", []string{"--deny", "@git-force-push"},
			[]string{"git", "push", "--m", "origin"}, `deny "@git-force-push"`},
		{"3 mirror clone", []string{"--deny", "@git-force-push"},
			[]string{"sh", "-c", "git clone -q --mirror " + remote + " m && cd m && git update-ref refs/heads/main main~1 && git push"}, `deny "@git-force-push"`},
		{"4 config-env autocorrect", []string{"--deny", "git push"},
			[]string{"env", "E=immediate", "git", "-c", "help.autocorrect=never", "--config-env=help.autocorrect=E", "psuh", "--force", "origin", "main"}, `deny "git push"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--policy", "empty.yaml", "--rw", remote}, tc.rules...)
			args = append(append(args, "--"), tc.argv...)
			r := runCordon(t, runOpts{dir: work, env: env}, args...)
			assert.NotEqual(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
			assert.Contains(t, r.stderr, "cordon: denied: ")
			assert.Contains(t, r.stderr, tc.rule)
			assert.Equal(t, before, remoteHead(), "the remote's main moved")
		})
	}
	t.Run("plain push still works", func(t *testing.T) {
		hostGit(t, env, work, "pull", "-q", "--no-rebase", "origin", "main")
		require.NoError(t, os.WriteFile(filepath.Join(work, "f"), []byte("three\n"), 0o644))
		hostGit(t, env, work, "commit", "-qam", "three")
		r := runCordon(t, runOpts{dir: work, env: env}, "run", "--policy", "empty.yaml", "--rw", remote,
			"--deny", "@git-force-push", "--", "git", "push", "-q", "origin", "main")
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotEqual(t, before, remoteHead())
	})
}

// TestRTProgramRun: the run-confirmed non-git findings with real programs:
// a strict allow rule and --flag=value (7), a copy of python named as an
// allowed program (8), and a renamed python running -m pip (9).
func TestRTProgramRun(t *testing.T) {
	requireSeccompNotify(t)
	py := elfOnPath(t, "python3")
	dir := t.TempDir()
	writeFile(t, dir, "empty.yaml", "version: 1\n")
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	run := func(args ...string) result {
		t.Helper()
		return runCordon(t, runOpts{dir: dir, env: env}, append([]string{"run", "--policy", "empty.yaml"}, args...)...)
	}

	t.Run("7 strict allow refuses --flag=value", func(t *testing.T) {
		r := run("--default", "deny", "--allow", "printf --help", "--", "printf", "--help=x")
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, "cordon: denied: printf --help=x (rule: default deny)")
	})
	t.Run("8 python copied as an allowed name", func(t *testing.T) {
		r := run("--default", "deny", "--allow", "ls", "--allow", "bash", "--allow", "cp", "--",
			"bash", "-c", "cp "+py+" ls && ./ls -c 'print(\"python ran\")'")
		assert.NotEqual(t, 0, r.code)
		assert.NotContains(t, r.stdout, "python ran")
		assert.Contains(t, r.stderr, "cordon: denied: ./ls -c")
		assert.Contains(t, r.stderr, "(rule: default deny)")
		// The real ls, by the same rule, runs.
		r = run("--default", "deny", "--allow", "ls", "--", "ls", "/")
		assert.Equal(t, 0, r.code, r.stderr)
	})
	t.Run("9 renamed python -m pip", func(t *testing.T) {
		r := run("--deny", "pip install", "--", "bash", "-c", "cp "+py+" py && ./py -m pip install --no-index nothing-here")
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, `(rule: deny "pip install")`)
	})
}

// elfOnPath returns the first executable named name on PATH that is an ELF
// file once symlinks are resolved (not a version manager's shim script),
// as a real path: a copy of it is a copy of the interpreter on the
// sandbox's PATH.
func elfOnPath(t *testing.T, name string) string {
	t.Helper()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p, err := filepath.EvalSymlinks(filepath.Join(d, name))
		if err != nil {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		head := make([]byte, 4)
		_, err = f.Read(head)
		f.Close()
		if err == nil && string(head) == "\x7fELF" {
			return p
		}
	}
	testcap.SkipOrFail(t, "no ELF %s on PATH", name)
	return ""
}

// TestRTPolicyCheck: every finding's spellings through "cordon policy
// check", built-in rules included.
func TestRTPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "cfg", "Host *\n  HostName prod-db\n")
	f := strings.Fields
	deny := func(rule string) []string { return []string{"--deny", rule} }
	runCheckCases(t, dir, []checkCase{
		{"1 alias shadowing", deny("git push"), f("git -c alias.push=status push origin main"), 1, `deny "git push"`},
		{"2 --m", deny("@git-force-push"), f("git push --m origin"), 1, `deny "@git-force-push"`},
		{"3 clone --mirror", deny("@git-force-push"), f("git clone --mirror /r m"), 1, `deny "@git-force-push"`},
		{"3 clone -c mirror", deny("@git-force-push"), f("git clone -c remote.origin.mirror=true /r m"), 1, `deny "@git-force-push"`},
		{"4 config-env", deny("git push"), f("git -c help.autocorrect=never --config-env=help.autocorrect=E psuh"), 1, `deny "git push"`},
		{"5 npm --loglev", deny("npm publish"), f("npm --loglev info publish"), 1, `deny "npm publish"`},
		{"5 npm --reg", deny("npm publish"), f("npm --reg http://x publish"), 1, `deny "npm publish"`},
		{"5 pip --retr", deny("pip install"), f("python3 -m pip --retr 0 install X"), 1, `deny "pip install"`},
		{"5 systemctl --typ", nil, f("systemctl --typ service reboot"), 1, `deny "@power-off"`},
		{"5 systemctl --job", nil, f("systemctl --job replace reboot"), 1, `deny "@power-off"`},
		{"6 nerdctl -n", nil, f("nerdctl -n k8s.io run --privileged alpine"), 1, `deny "@privileged-container"`},
		{"6 kubectl underscore", deny("kubectl delete"), f("kubectl --request_timeout 5s delete pod x"), 1, `deny "kubectl delete"`},
		{"6 kubectl --kuberc", deny("kubectl delete"), f("kubectl --kuberc x delete pod x"), 1, `deny "kubectl delete"`},
		{"7 --dry-run=false", []string{"--default", "deny", "--allow", "npm publish --dry-run"}, f("npm publish --dry-run=false"), 1, "default deny"},
		{"7 --dry-run", []string{"--default", "deny", "--allow", "npm publish --dry-run"}, f("npm publish --dry-run"), 0, "allow"},
		{"10 -vJ", deny("ssh prod-*"), f("ssh -vJ prod-db dev-1"), 1, `deny "ssh prod-*"`},
		{"10 -qo HostName", deny("ssh prod-*"), f("ssh -qo HostName=prod-db dev-1"), 1, `deny "ssh prod-*"`},
		{"10 -o blank", deny("ssh prod-*"), []string{"ssh", "-o", " HostName=prod-db", "dev-1"}, 1, `deny "ssh prod-*"`},
		{"10 -o quoted", deny("ssh prod-*"), []string{"ssh", "-o", `HostName="prod-db"`, "dev-1"}, 1, `deny "ssh prod-*"`},
		{"10 upper case", deny("ssh prod-*"), f("ssh PROD-db"), 1, `deny "ssh prod-*"`},
		{"10 127.9", deny("ssh 127.0.0.9"), f("ssh 127.9"), 1, `deny "ssh 127.0.0.9"`},
		{"10 decimal ip", deny("ssh 127.0.0.9"), f("ssh 2130706441"), 1, `deny "ssh 127.0.0.9"`},
		{"10 hex ip", deny("ssh 127.0.0.9"), f("ssh 0x7f000009"), 1, `deny "ssh 127.0.0.9"`},
		{"10 -J port", deny("ssh prod-db"), f("ssh -J prod-db:22 dev-1"), 1, `deny "ssh prod-db"`},
		{"10 -W", deny("ssh prod-*"), f("ssh -W prod-db:22 dev-1"), 1, `deny "ssh prod-*"`},
		{"10 -L", deny("ssh prod-*"), f("ssh -L 8080:prod-db:22 dev-1"), 1, `deny "ssh prod-*"`},
		{"11 -l root", deny("ssh root@*"), f("ssh -l root h"), 1, `deny "ssh root@*"`},
		{"11 -o User", deny("ssh root@*"), f("ssh -o User=root h"), 1, `deny "ssh root@*"`},
		{"11 uri", deny("ssh root@*"), f("ssh ssh://root@h"), 1, `deny "ssh root@*"`},
		{"11 scp", deny("ssh root@*"), f("scp f root@h:x"), 1, `deny "ssh root@*"`},
		{"12 -F", []string{"--default", "deny", "--allow", "ssh [options] dev-* $"}, f("ssh -F ./cfg dev-1"), 1, "default deny"},
		{"12 -qo HostName", []string{"--default", "deny", "--allow", "ssh [options] dev-* $"}, f("ssh -qo HostName=prod dev-1"), 1, "default deny"},
		{"12 RemoteCommand", []string{"--default", "deny", "--allow", "ssh [options] dev-* $"}, f("ssh -o RemoteCommand=reboot dev-1"), 1, "default deny"},
		{"12 plain", []string{"--default", "deny", "--allow", "ssh [options] dev-* $"}, f("ssh -v -p 22 dev-1"), 0, "allow"},
		{"13 semicolon", deny("ssh * rm -rf ..."), []string{"ssh", "h", "cd /;rm -rf x"}, 1, `deny "ssh * rm -rf ..."`},
		{"13 and-and", deny("ssh * rm -rf ..."), []string{"ssh", "h", "true&&rm -rf x"}, 1, `deny "ssh * rm -rf ..."`},
		{"13 quotes", deny("ssh * rm -rf ..."), []string{"ssh", "h", `r""m -rf x`}, 1, `deny "ssh * rm -rf ..."`},
		{"13 backslash", deny("ssh * rm -rf ..."), []string{"ssh", "h", `\rm -rf x`}, 1, `deny "ssh * rm -rf ..."`},
		{"14 -tv/:/h", nil, f("docker run -tv/:/h alpine"), 1, `deny "@privileged-container"`},
		{"14 -itv", nil, f("docker run -itv /:/h alpine"), 1, `deny "@privileged-container"`},
		{"14 //", nil, f("docker run -v //:/h alpine"), 1, `deny "@privileged-container"`},
		{"14 /proc/1/root", nil, f("docker run -v /proc/1/root:/h alpine"), 1, `deny "@privileged-container"`},
		{"14 mount Source", nil, f("docker run --mount type=bind,Source=/,target=/h alpine"), 1, `deny "@privileged-container"`},
		{"14 cap list", nil, f("podman run --cap-add=NET_ADMIN,SYS_ADMIN alpine"), 1, `deny "@privileged-container"`},
		{"14 compose run", nil, f("docker compose run -v /:/h svc"), 1, `deny "@privileged-container"`},
		{"15 isolate reboot", nil, f("systemctl isolate reboot"), 1, `deny "@power-off"`},
		{"15 start systemd-poweroff", nil, f("systemctl start systemd-poweroff"), 1, `deny "@power-off"`},
		{"15 shutdown.target", nil, f("systemctl start shutdown.target"), 1, `deny "@power-off"`},
		{"15 condrestart", nil, f("systemctl condrestart reboot.target"), 1, `deny "@power-off"`},
		{"15 dbus-send", nil, f("dbus-send --system --print-reply --dest=org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager.StartUnit string:reboot.target string:replace"), 1, `deny "@power-off"`},
		{"15 gdbus", nil, []string{"gdbus", "call", "--system", "--dest", "org.freedesktop.systemd1", "--object-path", "/org/freedesktop/systemd1", "--method", "org.freedesktop.systemd1.Manager.StartUnit", "'reboot.target'", "'replace'"}, 1, `deny "@power-off"`},
		{"15 busctl unit path", nil, f("busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/reboot_2etarget org.freedesktop.systemd1.Unit Start s replace"), 1, `deny "@power-off"`},
		{"16 cp -S", nil, f("cp img /dev/sda -S x"), 1, `deny "@block-device-write"`},
		{"16 install -m", nil, f("install img /dev/sda -m 644"), 1, `deny "@block-device-write"`},
		{"16 task root", nil, f("dd if=img of=/proc/self/task/1/root/dev/sda"), 1, `deny "@block-device-write"`},
		{"16 cwd", nil, f("dd if=img of=/proc/self/cwd/dev/sda"), 1, `deny "@block-device-write"`},
		{"16 /dev/root", nil, f("dd if=img of=/dev/root"), 1, `deny "@block-device-write"`},
		{"16 LV", nil, f("dd if=img of=/dev/vg0/lv0"), 1, `deny "@block-device-write"`},
		{"16 sg", nil, f("dd if=img of=/dev/sg0"), 1, `deny "@block-device-write"`},
		{"16 ram", nil, f("dd if=img of=/dev/ram0"), 1, `deny "@block-device-write"`},
		{"16 /dev/null", nil, f("dd if=img of=/dev/null"), 0, "allow"},
	})
}
