package policy

// Table tests for the red team's findings against the exec policy
// matching (issue 16 follow-up, rt-policy-report). Each case is a bypass
// the red team demonstrated, or a close variant; the numbers are the
// report's.

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// builtinCases decides argv with the built-in rules (meanings) on top of a
// default allow.
func runBuiltinCases(t *testing.T, tests []matchCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Default: Allow}
			for _, r := range tc.rules {
				if r[:5] == "allow" {
					cfg.Default = Deny
				}
				d, pat, _ := cut(r)
				dec, err := ParseDecision(d)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Rules = append(cfg.Rules, Rule{Decision: dec, Pattern: pat, Source: "test"})
			}
			p, err := Compile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := decideArgv(p, splitArgs(tc.argv)...)
			assert.Equal(t, tc.want, got.Decision, "%s against %q: %s", tc.argv, tc.rules, got.RuleText())
		})
	}
}

func cut(r string) (string, string, bool) {
	for i := 0; i < len(r); i++ {
		if r[i] == ' ' {
			return r[:i], r[i+1:], true
		}
	}
	return r, "", false
}

// splitArgs splits on blanks, except inside single quotes, which it drops:
// enough to write a word with blanks in a table.
func splitArgs(s string) []string {
	var out []string
	cur, in, any := []byte{}, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			in, any = !in, true
		case c == ' ' && !in:
			if any {
				out = append(out, string(cur))
			}
			cur, any = cur[:0], false
		default:
			cur, any = append(cur, c), true
		}
	}
	if any {
		out = append(out, string(cur))
	}
	return out
}

// #1: git ignores an alias that shadows a built-in command.
func TestRTGitAliasShadowsCommand(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"alias.push ignored", []string{"deny git push"}, "git -c alias.push=status push --force origin main", Deny},
		{"alias.push ignored, force meaning", []string{"deny @git-force-push"}, "git -c alias.push=status push --force origin main", Deny},
		{"alias case-folded", []string{"deny git push"}, "git -c Alias.Push=status push origin main", Deny},
		{"real alias still expands", []string{"deny git push"}, "git -c alias.p=push p origin", Deny},
		{"alias of non-command kept", []string{"deny git push"}, "git -c alias.st=status st", Allow},
	})
}

// #2: any abbreviation git finds unique.
func TestRTGitPushAbbreviation(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"--m is --mirror", []string{"deny @git-force-push"}, "git push --m origin", Deny},
		{"--mi", []string{"deny @git-force-push"}, "git push --mi origin", Deny},
		{"--fo", []string{"deny @git-force-push"}, "git push --fo origin", Deny},
		{"--p is --prune", []string{"deny @git-force-push"}, "git push --pr origin", Deny},
		{"plain push", []string{"deny @git-force-push"}, "git push origin main", Allow},
		{"--verbose", []string{"deny @git-force-push"}, "git push --verbose origin main", Allow},
	})
}

// #3: a mirror clone makes a later plain push a forced mirror push.
func TestRTGitCloneMirror(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"clone --mirror", []string{"deny @git-force-push"}, "git clone -q --mirror /tmp/r m", Deny},
		{"clone --mirr", []string{"deny @git-force-push"}, "git clone --mirr /tmp/r m", Deny},
		{"clone -c remote mirror", []string{"deny @git-force-push"}, "git clone -c remote.origin.mirror=true /tmp/r m", Deny},
		{"clone --config push", []string{"deny @git-force-push"}, "git clone --config remote.origin.push=+refs/heads/*:refs/heads/* /tmp/r m", Deny},
		{"clone --config=", []string{"deny @git-force-push"}, "git clone --config=remote.origin.push=+x /tmp/r m", Deny},
		{"clone -cremote attached", []string{"deny @git-force-push"}, "git clone -cremote.origin.mirror=1 /tmp/r m", Deny},
		{"plain clone", []string{"deny @git-force-push"}, "git clone /tmp/r m", Allow},
		{"http-push (gap noted)", []string{"deny @git-force-push"}, "git http-push --force https://h/r.git +main", Deny},
		{"bare clone", []string{"deny @git-force-push"}, "git clone --bare /tmp/r m", Allow},
	})
}

// #4: a later --config-env help.autocorrect turns autocorrect back on.
func TestRTGitAutocorrectConfigEnv(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"config-env after never", []string{"deny git push"}, "git -c help.autocorrect=never --config-env=help.autocorrect=E psuh origin main", Deny},
		{"config-env separate", []string{"deny git push"}, "git -c help.autocorrect=never --config-env help.autocorrect=E psuh origin main", Deny},
		{"-c key alone is true", []string{"deny git push"}, "git -c help.autocorrect=never -c help.autocorrect psuh", Deny},
		{"never holds", []string{"deny git push"}, "git -c help.autocorrect=never psuh origin main", Allow},
	})
}

// #5: an abbreviated value-taking option takes the next word, which hides
// the subcommand; and an abbreviation that is not unique does not.
func TestRTAbbreviatedValueOption(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"npm --loglev", []string{"deny npm publish"}, "npm --loglev info publish", Deny},
		{"npm --reg", []string{"deny npm publish"}, "npm --reg http://x publish", Deny},
		{"npm ambiguous prefix as a flag", []string{"deny npm publish"}, "npm --re publish x", Deny},
		{"pip --retr", []string{"deny pip install"}, "pip --retr 0 install X", Deny},
		{"python -m pip --retr", []string{"deny pip install"}, "python3 -m pip --retr 0 install X", Deny},
		{"systemctl --typ", []string{"deny @power-off"}, "systemctl --typ service reboot", Deny},
		{"systemctl --job", []string{"deny @power-off"}, "systemctl --job replace reboot", Deny},
		{"npm flag then true", []string{"deny npm publish"}, "npm --xyz true publish", Deny},
		{"npm flag then false", []string{"deny npm publish"}, "npm --dry-run false publish", Deny},
		{"npm install untouched", []string{"deny npm publish"}, "npm --loglev info install", Allow},
		{"strict allow not widened", []string{"allow npm publish --dry-run"}, "npm --reg x publish --dry-run", Deny},
		{"[options] allow needs both readings", []string{"allow npm [options] publish ..."}, "npm --loglev publish install x", Deny},
		{"[options] allow, both readings agree", []string{"allow npm [options] install ..."}, "npm --loglev info install x", Deny},
		{"[options] allow, plain", []string{"allow npm [options] install ..."}, "npm --loglevel info install x", Allow},
	})
}

// #6: option tables for nerdctl, kubectl's normalised names.
func TestRTMissingGlobalOptions(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"nerdctl -n", []string{"deny @privileged-container"}, "nerdctl -n k8s.io run --privileged alpine", Deny},
		{"nerdctl --namespace", []string{"deny @privileged-container"}, "nerdctl --namespace k8s.io run --privileged alpine", Deny},
		{"kubectl underscore", []string{"deny kubectl delete"}, "kubectl --request_timeout 5s delete pod x", Deny},
		{"kubectl --kuberc", []string{"deny kubectl delete"}, "kubectl --kuberc x delete pod x", Deny},
		{"kubectl get", []string{"deny kubectl delete"}, "kubectl --request_timeout 5s get pod", Allow},
	})
}

// #7: a strict allow rule naming a flag does not match --flag=value.
func TestRTStrictFlagValue(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"dry-run=false", []string{"allow npm publish --dry-run"}, "npm publish --dry-run=false", Deny},
		{"dry-run=0", []string{"allow npm publish --dry-run"}, "npm publish --dry-run=0", Deny},
		{"dry-run", []string{"allow npm publish --dry-run"}, "npm publish --dry-run", Allow},
		{"dry-run false", []string{"allow npm publish --dry-run"}, "npm publish --dry-run false", Deny},
		{"dry-run true", []string{"allow npm publish --dry-run"}, "npm publish --dry-run true", Deny},
		{"docker read-only=false", []string{"allow docker run --read-only alpine"}, "docker run --read-only=false alpine", Deny},
		{"deny still loose", []string{"deny npm publish --dry-run"}, "npm publish --dry-run=true", Deny},
	})
}

// #9: python -m decided by identity, whatever the file is named.
func TestRTPythonByIdentity(t *testing.T) {
	py := FileID{Dev: 1, Ino: 50, Size: 6000000}
	fs := newFakeFiles()
	fs.add("python3", py)
	fs.sums[py] = [32]byte{9}
	copyID := FileID{Dev: 2, Ino: 77, Size: py.Size}
	fs.sums[copyID] = [32]byte{9}
	p := compileRules(t, Allow, "deny pip install").WithFiles(fs)
	for _, tc := range []struct {
		name string
		e    Exec
		want Decision
	}{
		{"renamed copy -m pip", Exec{Argv: fields("./py -m pip install X"), Path: "./py", Resolved: "/tmp/py", File: copyID, Known: true}, Deny},
		{"hard link -m pip", Exec{Argv: fields("./py -m pip install X"), Path: "./py", Resolved: "/tmp/py", File: py, Known: true}, Deny},
		{"copy -m pip list", Exec{Argv: fields("./py -m pip list"), Path: "./py", Resolved: "/tmp/py", File: copyID, Known: true}, Allow},
		{"other file", Exec{Argv: fields("./py -m pip install X"), Path: "./py", Resolved: "/tmp/py", File: FileID{Dev: 3, Ino: 1, Size: 5}, Known: true}, Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			r := p.Decide(&e)
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}
}

// #8: in allowlist mode, an allow rule naming a program by name needs the
// program's identity when it is known.
func TestRTAllowNeedsIdentity(t *testing.T) {
	ls := FileID{Dev: 1, Ino: 10, Size: 140000}
	py := FileID{Dev: 1, Ino: 50, Size: 6000000}
	fs := newFakeFiles()
	fs.add("ls", ls)
	fs.add("python3", py)
	fs.sums[ls] = [32]byte{1}
	lsCopy := FileID{Dev: 2, Ino: 5, Size: ls.Size}
	fs.sums[lsCopy] = [32]byte{1}
	p := compileRules(t, Deny, "allow ls", "deny ls /secret").WithFiles(fs)
	for _, tc := range []struct {
		name string
		e    Exec
		want Decision
	}{
		{"python copied as ls", Exec{Argv: fields("./ls -c x"), Path: "./ls", Resolved: "/work/ls", File: FileID{Dev: 2, Ino: 9, Size: 6000000}, Known: true}, Deny},
		{"python hard-linked as ls", Exec{Argv: fields("./ls -c x"), Path: "./ls", Resolved: "/work/ls", File: py, Known: true}, Deny},
		{"the real ls", Exec{Argv: fields("ls -la"), Path: "/usr/bin/ls", Resolved: "/usr/bin/ls", File: ls, Known: true}, Allow},
		{"a copy of ls", Exec{Argv: fields("./ls -la"), Path: "./ls", Resolved: "/work/ls", File: lsCopy, Known: true}, Allow},
		{"deny by name still holds", Exec{Argv: fields("./ls /secret"), Path: "./ls", Resolved: "/work/ls", File: FileID{Dev: 2, Ino: 9, Size: 6}, Known: true}, Deny},
		{"no identity: by name", Exec{Argv: fields("ls -la"), Path: "/usr/bin/ls", Resolved: "/usr/bin/ls"}, Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			r := p.Decide(&e)
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}
}

// #10: ssh destination spellings.
func TestRTSSHDestinations(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"-vJ cluster", []string{"deny ssh prod-*"}, "ssh -vJ prod-1 dev-1", Deny},
		{"-qo HostName", []string{"deny ssh prod-*"}, "ssh -qo HostName=prod-db dev-1", Deny},
		{"-o leading blank", []string{"deny ssh prod-*"}, "ssh -o ' HostName=prod-db' dev-1", Deny},
		{"-o quoted value", []string{"deny ssh prod-*"}, "ssh -o 'HostName=\"prod-db\"' dev-1", Deny},
		{"-o key blank value", []string{"deny ssh prod-*"}, "ssh -o 'hostname prod-db' dev-1", Deny},
		{"upper case host", []string{"deny ssh prod-*"}, "ssh PROD-db", Deny},
		{"ip short form", []string{"deny ssh 127.0.0.9"}, "ssh 127.9", Deny},
		{"ip decimal", []string{"deny ssh 127.0.0.9"}, "ssh 2130706441", Deny},
		{"ip hex", []string{"deny ssh 127.0.0.9"}, "ssh 0x7f000009", Deny},
		{"ip octal part", []string{"deny ssh 127.0.0.9"}, "ssh 0177.0.0.011", Deny},
		{"-J with port", []string{"deny ssh prod-1"}, "ssh -J prod-1:22 dev-1", Deny},
		{"-J user and port", []string{"deny ssh prod-1"}, "ssh -J u@prod-1:22 dev-1", Deny},
		{"-W", []string{"deny ssh prod-*"}, "ssh -W prod-1:22 dev-1", Deny},
		{"-L", []string{"deny ssh prod-*"}, "ssh -L 8080:prod-1:22 dev-1", Deny},
		{"-L bind", []string{"deny ssh prod-*"}, "ssh -L127.0.0.1:8080:prod-1:22 dev-1", Deny},
		{"-o ProxyJump list", []string{"deny ssh prod-*"}, "ssh -o ProxyJump=a,prod-2:22 dev-1", Deny},
		{"other host", []string{"deny ssh prod-*"}, "ssh -v -o HostName=dev-2 dev-1", Allow},
	})
}

// #11: the user a connection logs in as, however given.
func TestRTSSHUser(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"-l root", []string{"deny ssh root@*"}, "ssh -l root h", Deny},
		{"-lroot", []string{"deny ssh root@*"}, "ssh -lroot h", Deny},
		{"-o User=root", []string{"deny ssh root@*"}, "ssh -o User=root h", Deny},
		{"uri user", []string{"deny ssh root@*"}, "ssh ssh://root@h", Deny},
		{"uri user and port", []string{"deny ssh root@*"}, "ssh ssh://root@h:22", Deny},
		{"scp user", []string{"deny ssh root@*"}, "scp f root@h:x", Deny},
		{"scp -o User", []string{"deny ssh root@*"}, "scp -o User=root f h:x", Deny},
		{"written", []string{"deny ssh root@*"}, "ssh root@h", Deny},
		{"other user", []string{"deny ssh root@*"}, "ssh -l admin h", Allow},
	})
}

// #12: an allow rule for a host refuses command lines whose options send
// the connection elsewhere or run a command.
func TestRTSSHAllowStrict(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"-F config", []string{"allow ssh [options] dev-* $"}, "ssh -F ./cfg dev-1", Deny},
		{"-qo HostName", []string{"allow ssh [options] dev-* $"}, "ssh -qo HostName=prod dev-1", Deny},
		{"-o blank HostName", []string{"allow ssh [options] dev-* $"}, "ssh -o ' HostName=prod' dev-1", Deny},
		{"RemoteCommand", []string{"allow ssh [options] dev-* $"}, "ssh -o RemoteCommand=reboot dev-1", Deny},
		{"-W", []string{"allow ssh [options] dev-* $"}, "ssh -W prod:22 dev-1", Deny},
		{"-L", []string{"allow ssh [options] dev-* $"}, "ssh -L 1:prod:22 dev-1", Deny},
		{"-D", []string{"allow ssh [options] dev-* $"}, "ssh -D 1080 dev-1", Deny},
		{"-S control path", []string{"allow ssh [options] dev-* $"}, "ssh -S /tmp/ctl dev-1", Deny},
		{"-I pkcs11", []string{"allow ssh [options] dev-* $"}, "ssh -I ./lib.so dev-1", Deny},
		{"-vF cluster", []string{"allow ssh [options] dev-* $"}, "ssh -vF ./cfg dev-1", Deny},
		{"plain options", []string{"allow ssh [options] dev-* $"}, "ssh -v -p 22 -o ConnectTimeout=5 dev-1", Allow},
	})
}

// #13: the remote command, split as the remote shell does.
func TestRTSSHRemoteShell(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"semicolon", []string{"deny ssh * rm -rf ..."}, "ssh h 'cd /;rm -rf x'", Deny},
		{"and-and", []string{"deny ssh * rm -rf ..."}, "ssh h 'true&&rm -rf x'", Deny},
		{"empty quotes", []string{"deny ssh * rm -rf ..."}, `ssh h 'r""m -rf x'`, Deny},
		{"backslash", []string{"deny ssh * rm -rf ..."}, `ssh h '\rm -rf x'`, Deny},
		{"subshell", []string{"deny ssh * rm -rf ..."}, "ssh h '(rm -rf x)'", Deny},
		{"nested sh -c", []string{"deny ssh * rm -rf ..."}, `ssh h sh -c '"rm -rf x"'`, Deny},
		{"dynamic program", []string{"deny ssh * rm -rf ..."}, "ssh h '$X -rf x'", Deny},
		{"harmless", []string{"deny ssh * rm -rf ..."}, "ssh h 'cd /; ls -la'", Allow},
	})
}

// #14: privileged containers, however spelled.
func TestRTPrivilegedContainer(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"-tv/:/h", []string{"deny @privileged-container"}, "docker run -tv/:/h alpine", Deny},
		{"-itv /:/h", []string{"deny @privileged-container"}, "docker run -itv /:/h alpine", Deny},
		{"//", []string{"deny @privileged-container"}, "docker run -v //:/h alpine", Deny},
		{"/.", []string{"deny @privileged-container"}, "docker run -v /.:/h alpine", Deny},
		{"/proc/1/root", []string{"deny @privileged-container"}, "docker run -v /proc/1/root:/h alpine", Deny},
		{"mount Source", []string{"deny @privileged-container"}, "docker run --mount type=bind,Source=/,target=/h alpine", Deny},
		{"mount quoted", []string{"deny @privileged-container"}, `docker run --mount type=bind,"source=/",target=/h alpine`, Deny},
		{"cap-add list", []string{"deny @privileged-container"}, "podman run --cap-add=NET_ADMIN,SYS_ADMIN alpine", Deny},
		{"compose run -v", []string{"deny @privileged-container"}, "docker compose run -v /:/h svc", Deny},
		{"compose run --cap-add", []string{"deny @privileged-container"}, "docker compose run --cap-add SYS_ADMIN svc", Deny},
		{"plain volume", []string{"deny @privileged-container"}, "docker run -itv /srv:/h alpine", Allow},
		{"--device disk (gap noted)", []string{"deny @privileged-container"}, "docker run --device /dev/sda alpine", Deny},
		{"--device=disk:path", []string{"deny @privileged-container"}, "docker run --device=/dev/nvme0n1:/dev/x alpine", Deny},
		{"--device fuse", []string{"deny @privileged-container"}, "docker run --device /dev/fuse alpine", Allow},
		{"plain run", []string{"deny @privileged-container"}, "docker run -it alpine sh", Allow},
	})
}

// #15: power off, however asked.
func TestRTPowerOff(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"isolate reboot", []string{"deny @power-off"}, "systemctl isolate reboot", Deny},
		{"start systemd-poweroff", []string{"deny @power-off"}, "systemctl start systemd-poweroff", Deny},
		{"start shutdown.target", []string{"deny @power-off"}, "systemctl start shutdown.target", Deny},
		{"start final.target", []string{"deny @power-off"}, "systemctl start final.target", Deny},
		{"condrestart", []string{"deny @power-off"}, "systemctl condrestart reboot.target", Deny},
		{"start glob", []string{"deny @power-off"}, "systemctl start 'reboot.*'", Deny},
		{"dbus-send string:", []string{"deny @power-off"}, "dbus-send --system --dest=org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager.StartUnit string:reboot.target string:replace", Deny},
		{"gdbus quoted", []string{"deny @power-off"}, `gdbus call --system --dest org.freedesktop.systemd1 --object-path /org/freedesktop/systemd1 --method org.freedesktop.systemd1.Manager.StartUnit "'reboot.target'" "'replace'"`, Deny},
		{"busctl unit path", []string{"deny @power-off"}, "busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/reboot_2etarget org.freedesktop.systemd1.Unit Start s replace", Deny},
		{"start nginx", []string{"deny @power-off"}, "systemctl start nginx", Allow},
		{"isolate multi-user", []string{"deny @power-off"}, "systemctl isolate multi-user", Allow},
	})
}

// #16: block devices, however spelled.
func TestRTBlockDevice(t *testing.T) {
	runBuiltinCases(t, []matchCase{
		{"cp -S after", []string{"deny @block-device-write"}, "cp img /dev/sda -S x", Deny},
		{"install -m after", []string{"deny @block-device-write"}, "install img /dev/sda -m 644", Deny},
		{"task root", []string{"deny @block-device-write"}, "dd if=img of=/proc/self/task/1/root/dev/sda", Deny},
		{"cwd", []string{"deny @block-device-write"}, "dd if=img of=/proc/self/cwd/dev/sda", Deny},
		{"/dev/root", []string{"deny @block-device-write"}, "dd if=img of=/dev/root", Deny},
		{"LVM", []string{"deny @block-device-write"}, "dd if=img of=/dev/vg0/lv0", Deny},
		{"sg", []string{"deny @block-device-write"}, "dd if=img of=/dev/sg0", Deny},
		{"ram", []string{"deny @block-device-write"}, "dd if=img of=/dev/ram0", Deny},
		{"null", []string{"deny @block-device-write"}, "dd if=img of=/dev/null", Allow},
		{"tee stderr", []string{"deny @block-device-write"}, "tee /dev/stderr", Allow},
		{"pts", []string{"deny @block-device-write"}, "tee /dev/pts/0", Allow},
		{"file", []string{"deny @block-device-write"}, "cp img /tmp/x -S y", Allow},
	})
}
