package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decideCases decides each command line (split on blanks, or on '|' when
// it has one, for words with blanks) against p.
func decideCases(t *testing.T, p *Policy, cases map[string]Decision) {
	t.Helper()
	for argv, want := range cases {
		words := fields(argv)
		if strings.Contains(argv, "|") {
			words = strings.Split(argv, "|")
		}
		got := decideArgv(p, words...)
		assert.Equal(t, want, got.Decision, "%q: %s", argv, got.RuleText())
	}
}

// TestGitForcePushMeaning is the red team's list: every spelling of a
// force push, and the plain pushes that must stay allowed.
func TestGitForcePushMeaning(t *testing.T) {
	p := compileRules(t, Allow, "deny @git-force-push")
	decideCases(t, p, map[string]Decision{
		"git push --force":                                          Deny,
		"git push -f origin main":                                   Deny,
		"git push -uf origin main":                                  Deny,
		"git push --forc origin main":                               Deny,
		"git push --force-with-lease":                               Deny,
		"git push --force-with-lease=main:abc origin main":          Deny,
		"git push --force-if-includes":                              Deny,
		"git push origin +main":                                     Deny,
		"git push origin +refs/heads/*:refs/heads/*":                Deny,
		"git push --mirror":                                         Deny,
		"git push --mirr origin":                                    Deny,
		"git push origin --delete main":                             Deny,
		"git push -d origin main":                                   Deny,
		"git push origin :main":                                     Deny,
		"git push --prune origin":                                   Deny,
		"git send-pack --force remote main":                         Deny,
		"git send-pack remote +main":                                Deny,
		"git -c remote.origin.push=+refs/heads/*:refs/heads/* push": Deny,
		"git -c remote.origin.mirror=true push":                     Deny,
		"git --config-env remote.origin.push=PUSHSPEC push":         Deny,
		"git --config-env=remote.origin.push=PUSHSPEC push":         Deny,
		"git config remote.origin.push +refs/heads/*:refs/heads/*":  Deny,
		"git config --add remote.origin.mirror true":                Deny,
		"git remote add --mirror=push backup url":                   Deny,
		"git -c alias.p=push\\ -f p":                                Allow, // one word with a backslash: not an alias git splits
		"git|-c|alias.p=push -f|p":                                  Deny,
		"git pusj --force":                                          Deny,
		"git psuh -f":                                               Deny,
		"git push origin main":                                      Allow,
		"git push":                                                  Allow,
		"git push --dry-run origin main":                            Allow,
		"git push --follow-tags origin main":                        Allow,
		"git -c remote.origin.push=refs/heads/main push":            Allow,
		"git -c remote.origin.mirror=false push":                    Allow,
		"git config user.name x":                                    Allow,
		"git log --force":                                           Allow,
		"git commit -m +main":                                       Allow,
	})
}

func TestGitForcePushDashed(t *testing.T) {
	p := compileRules(t, Allow, "deny @git-force-push")
	r := p.Decide(&Exec{Argv: []string{"git-push", "--force"}, Path: "/usr/bin/git", Resolved: "/usr/bin/git"})
	assert.Equal(t, Deny, r.Decision)
}

// TestGitAutocorrect: an unknown subcommand is decided as what git's
// help.autocorrect may run.
func TestGitAutocorrect(t *testing.T) {
	assert.Equal(t, 2, gitLevenshtein("pusj", "push"))
	assert.Equal(t, 0, gitLevenshtein("psuh", "push"), "swapping neighbours is free")
	assert.Equal(t, 3, gitLevenshtein("pushh", "push"), "deleting costs 3")
	assert.Equal(t, 0, gitScore("pu", "push"), "prefix of a common command")
	assert.LessOrEqual(t, len(gitCommandList()), maxGitCommands)

	p := compileRules(t, Allow, "deny git push")
	decideCases(t, p, map[string]Decision{
		"git pusj origin main":                   Deny,
		"git psuh":                               Deny,
		"git pish":                               Deny,
		"git -c help.autocorrect=immediate pusj": Deny,
		"git -c help.autocorrect=0 pusj":         Allow,
		"git -c help.autocorrect=never pusj":     Allow,
		"git -c help.autocorrect=never -c help.autocorrect=1 pusj": Deny,
		"git stauts":           Allow,
		"git xyzzy-frobnicate": Allow,
	})
	// In allowlist mode the one best correction is decided fully.
	p = compileRules(t, Deny, "allow git status")
	decideCases(t, p, map[string]Decision{
		"git status": Allow,
		"git stauts": Allow,
		"git stat":   Allow,
		"git pusj":   Deny,
	})
}

func TestBlockDeviceWriteMeaning(t *testing.T) {
	p := compileRules(t, Allow, "deny @block-device-write")
	decideCases(t, p, map[string]Decision{
		"dd if=x of=/dev/sda":                 Deny,
		"dd if=x of=/dev//sda":                Deny,
		"dd if=x of=//dev/sda":                Deny,
		"dd if=x of=/dev/./sda":               Deny,
		"dd if=x of=/dev/../dev/sda":          Deny,
		"dd if=x of=/proc/self/root/dev/sda":  Deny,
		"dd if=x of=/proc/1/root/dev/nvme0n1": Deny,
		"dd if=x of=/dev/disk/by-id/ata-x":    Deny,
		"dd if=x of=/dev/mapper/root":         Deny,
		"dd if=x of=/dev/block/8:0":           Deny,
		"shred -n1 /dev//sdb":                 Deny,
		"tee /dev/sda":                        Deny,
		"cp disk.img /dev/sdc":                Deny,
		"cp -t /dev/sdc disk.img":             Deny,
		"dd if=/dev/sda of=backup.img":        Allow,
		"dd if=x of=/dev/null":                Allow,
		"dd if=x of=/dev//null":               Allow,
		"tee /dev/stderr":                     Allow,
		"cp a b":                              Allow,
		"shred ./secret":                      Allow,
	})
}

func TestPrivilegedContainerMeaning(t *testing.T) {
	p := compileRules(t, Allow, "deny @privileged-container")
	decideCases(t, p, map[string]Decision{
		"docker run --privileged alpine":                         Deny,
		"docker container run --privileged alpine":               Deny,
		"docker create --privileged alpine":                      Deny,
		"docker container create --privileged=true alpine":       Deny,
		"podman run --privileged alpine":                         Deny,
		"podman container create --privileged alpine":            Deny,
		"nerdctl run --privileged alpine":                        Deny,
		"docker exec --privileged c sh":                          Deny,
		"docker --context x run --privileged alpine":             Deny,
		"docker run --cap-add=ALL alpine":                        Deny,
		"docker run --cap-add sys_admin alpine":                  Deny,
		"docker run --cap-add CAP_SYS_ADMIN alpine":              Deny,
		"docker run --pid=host alpine":                           Deny,
		"docker run -v /:/host alpine":                           Deny,
		"docker run -v/:/host alpine":                            Deny,
		"docker run --volume=/:/h alpine":                        Deny,
		"docker run --mount type=bind,source=/,target=/h alpine": Deny,
		"docker run --privileged=false alpine":                   Allow,
		"docker run -v /srv:/data alpine":                        Allow,
		"docker run --cap-add NET_ADMIN alpine":                  Allow,
		"docker ps":                                              Allow,
		"docker container ls":                                    Allow,
	})
}

func TestPowerOffMeaning(t *testing.T) {
	p := compileRules(t, Allow, "deny @power-off")
	decideCases(t, p, map[string]Decision{
		"systemctl poweroff":                          Deny,
		"systemctl -H host reboot":                    Deny,
		"systemctl start reboot.target":               Deny,
		"systemctl isolate poweroff.target":           Deny,
		"systemctl start systemd-halt.service":        Deny,
		"systemctl --no-block start runlevel6.target": Deny,
		"systemctl suspend":                           Deny,
		"loginctl poweroff":                           Deny,
		"loginctl reboot":                             Deny,
		"busctl call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager PowerOff b false":                                   Deny,
		"busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager StartUnit ss reboot.target replace":           Deny,
		"dbus-send --system --print-reply --dest=org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager.Reboot boolean:true":    Deny,
		"gdbus call --system --dest org.freedesktop.login1 --object-path /org/freedesktop/login1 --method org.freedesktop.login1.Manager.Suspend true": Deny,
		"systemctl status reboot.target": Allow,
		"systemctl start nginx":          Allow,
		"loginctl list-sessions":         Allow,
		"busctl list":                    Allow,
	})
}

// TestBuiltinMeanings: the built-in list uses the meanings, so the red
// team's spellings are denied out of the box.
func TestBuiltinMeanings(t *testing.T) {
	p, err := Compile(Config{Default: Allow, Builtins: true})
	require.NoError(t, err)
	decideCases(t, p, map[string]Decision{
		"dd if=/dev/zero of=/dev//sda":        Deny,
		"docker container run --privileged x": Deny,
		"docker create --privileged x":        Deny,
		"podman container run --privileged x": Deny,
		"systemctl start reboot.target":       Deny,
		"loginctl poweroff":                   Deny,
		"busctl call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager PowerOff b false": Deny,
		"docker run alpine echo hi": Allow,
	})
}

func TestRunpy(t *testing.T) {
	p := compileRules(t, Allow, "deny pip install")
	decideCases(t, p, map[string]Decision{
		"python3 -m pip install x":                Deny,
		"python3 -m runpy pip install x":          Deny,
		"python3 -m runpy runpy pip install x":    Deny,
		"python3 -m runpy pip.__main__ install x": Deny,
		"python3 -m runpy pip list":               Allow,
		"python3 -m runpy":                        Allow,
	})
}

func TestMeaningErrors(t *testing.T) {
	for _, pat := range []string{"@nope", "@git-force-push origin", "@"} {
		_, err := Compile(Config{Rules: []Rule{{Decision: Deny, Pattern: pat}}})
		if pat == "@" {
			// A lone @ is a program named "@", not a meaning.
			assert.NoError(t, err)
			continue
		}
		assert.Error(t, err, pat)
	}
	// Quoted, @ is literal: a program named @git-force-push.
	p := compileRules(t, Allow, `deny \@git-force-push`)
	assert.Equal(t, Allow, decideArgv(p, fields("git push -f")...).Decision)
	assert.Equal(t, Deny, decideArgv(p, "@git-force-push").Decision)
	assert.Len(t, Meanings(), 4)
}

// TestGitScoreBound: the cheap bound never exceeds git's distance, so no
// candidate git could pick is skipped.
func TestGitScoreBound(t *testing.T) {
	for _, typed := range []string{"pusj", "psuh", "stauts", "comit", "x", "rebsae", "checkuot", "send-pak", "config-", "--"} {
		for i, c := range gitCommandList() {
			assert.LessOrEqual(t, lowerBound(letterMask(typed), gitCommandMasks()[i]), gitLevenshtein(typed, c), "%s -> %s", typed, c)
			if d := gitLevenshtein(typed, c); d < gitSimilarityFloor-1 {
				assert.Equal(t, d, gitLevenshteinMax(typed, c, gitSimilarityFloor-1), "%s -> %s", typed, c)
			}
		}
	}
}
