package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSSHHostRules(t *testing.T) {
	p := compileRules(t, Allow, "deny ssh prod-*", "deny ssh * rm -rf ...", "deny ssh root@*")
	decideCases(t, p, map[string]Decision{
		"ssh prod-db":                                 Deny,
		"ssh admin@prod-db":                           Deny,
		"ssh ssh://admin@prod-db:2222":                Deny,
		"ssh -p 22 prod-db":                           Deny,
		"ssh -p22 prod-db uptime":                     Deny,
		"ssh -vp 22 prod-db":                          Deny,
		"ssh -o StrictHostKeyChecking=no prod-db":     Deny,
		"ssh -l admin prod-db":                        Deny,
		"ssh -vl admin prod-db":                       Deny,
		"ssh -J prod-bastion dev-1":                   Deny,
		"ssh -J dev-jump,admin@prod-bastion:22 dev-1": Deny,
		"ssh -o ProxyJump=prod-bastion dev-1":         Deny,
		"ssh|-o|HostName prod-db|dev-alias":           Deny,
		"ssh -oHostName=prod-db dev-alias":            Deny,
		"ssh dev-1 -- rm -rf /":                       Deny,
		"ssh dev-1 rm -rf /":                          Deny,
		"ssh dev-1 rm -r -f /":                        Deny,
		"ssh|dev-1|rm -rf /":                          Deny,
		"ssh|dev-1|cd / && rm -rf x":                  Deny,
		"ssh root@dev-1":                              Deny,
		"ssh dev-1":                                   Allow,
		"ssh dev-1 ls -la":                            Allow,
		"ssh -p 2222 dev-1 uptime":                    Allow,
		"ssh dev-1 echo prod-db":                      Allow,
		"ssh -i prod-key dev-1":                       Allow,
	})
}

func TestSSHAllowIsStrict(t *testing.T) {
	p := compileRules(t, Deny, "allow ssh [options] dev-* $", "allow ssh dev-1 uptime", "allow ssh dev-1 ls ...")
	decideCases(t, p, map[string]Decision{
		"ssh dev-2":                            Allow,
		"ssh -p 22 user@dev-2":                 Allow,
		"ssh dev-1 uptime":                     Allow,
		"ssh dev-1 ls -la /tmp":                Allow,
		"ssh|dev-1|ls -la":                     Allow,
		"ssh dev-1 uptime now":                 Deny,
		"ssh|dev-1|ls; rm -rf /":               Deny,
		"ssh|dev-1|ls && rm -rf /":             Deny,
		"ssh|dev-1|ls $(rm -rf /)":             Deny,
		"ssh|dev-1|ls `id`":                    Deny,
		"ssh|dev-1|ls|>/etc/x":                 Deny,
		"ssh -J prod dev-2":                    Deny,
		"ssh -o HostName=prod dev-2":           Deny,
		"ssh|-o|ProxyCommand=nc prod 22|dev-2": Deny,
		"ssh prod-1":                           Deny,
	})
}

func TestSSHCarriers(t *testing.T) {
	p := compileRules(t, Allow, "deny ssh prod-*")
	decideCases(t, p, map[string]Decision{
		"scp file prod-db:/tmp":                  Deny,
		"scp admin@prod-db:/etc/x .":             Deny,
		"scp -P 2222 x scp://admin@prod-db:22/x": Deny,
		"scp -J prod-jump x dev:/tmp":            Deny,
		"sftp prod-db":                           Deny,
		"sftp admin@prod-db:/x":                  Deny,
		"rsync -a x prod-db:/srv":                Deny,
		"rsync -e ssh -a x admin@prod-db:/srv":   Deny,
		"rsync -a x rsync://prod-db/mod":         Deny,
		"rsync -a x prod-db::mod":                Deny,
		"scp file dev:/tmp":                      Allow,
		"scp ./a:b /tmp":                         Allow,
		"rsync -a src/ dst/":                     Allow,
		"sftp dev-1":                             Allow,
	})
	assert.Equal(t, "h", hostOf("ssh://u@h:22/x"))
	assert.Equal(t, "::1", hostOf("u@[::1]"))
	assert.Equal(t, "h", remoteHostOf("scp", "u@h:path", false))
	assert.Equal(t, "", remoteHostOf("scp", "/a:b", false))
}

const fenceSSHConfig = `{
  "command": {"deny": ["git push", "shutdown"], "useDefaults": false},
  "ssh": {
    "allowedHosts": ["*.example.com", "dev-*"],
    "deniedHosts": ["prod.example.com"],
    "allowedCommands": ["ls", "tail -f"],
    "deniedCommands": ["rm -rf"],
    "inheritDeny": true
  }
}`

// TestFenceSSH pins fence's evaluation order for its ssh section.
func TestFenceSSH(t *testing.T) {
	f, err := Parse("fence.json", []byte(fenceSSHConfig))
	require.NoError(t, err)
	assert.Empty(t, f.Warnings)
	p, err := Compile(f.Config)
	require.NoError(t, err)
	decideCases(t, p, map[string]Decision{
		"ssh a.example.com":               Allow, // interactive, allowed host
		"ssh -p 22 user@a.example.com":    Allow,
		"ssh dev-1 ls -la":                Allow,
		"ssh -p 2222 -i key dev-1 ls -la": Allow,
		"ssh -J jump dev-1 ls":            Deny, // a redirected connection is not the allowed host
		"ssh dev-1 tail -f /var/log/x":    Allow,
		"ssh dev-1 tail /var/log/x":       Deny, // "tail -f" names its option
		"ssh dev-1 cat /etc/passwd":       Deny, // not an allowed command
		"ssh prod.example.com":            Deny, // denied host beats allowed pattern
		"ssh prod.example.com ls":         Deny,
		"ssh other.org":                   Deny, // not an allowed host
		"ssh dev-1 rm -rf /":              Deny, // denied command
		"ssh dev-1 ls && rm -rf /":        Deny,
		"ssh dev-1 git push":              Deny, // inherited command.deny
		"ssh dev-1 shutdown -h now":       Deny,
		"ssh -J prod.example.com dev-1":   Deny,
		"scp x prod.example.com:/tmp":     Deny,
		"scp x other.org:/tmp":            Deny,
		"git status":                      Allow,
	})

	f, err = Parse("fence.json", []byte(`{"ssh": {"allowedHosts": ["*"], "allowAllCommands": true, "deniedCommands": ["shutdown"]}}`))
	require.NoError(t, err)
	p, err = Compile(f.Config)
	require.NoError(t, err)
	decideCases(t, p, map[string]Decision{
		"ssh anyhost uptime":       Allow,
		"ssh -p 22 anyhost uptime": Allow,
		"ssh anyhost shutdown -r":  Deny,
		"ssh anyhost":              Allow,
	})

	for _, bad := range []string{
		`{"ssh": []}`, `{"ssh": {"allowedHosts": "x"}}`, `{"ssh": {"hosts": []}}`,
		`{"ssh": {"allowAllCommands": "yes"}}`, `{"ssh": {"allowedHosts": [""]}}`,
	} {
		_, err := Parse("fence.json", []byte(bad))
		assert.Error(t, err, bad)
	}
}

// TestFenceDefaults: useDefaults (on when absent) brings fence's own list
// as well as cordon's; off, neither.
func TestFenceDefaults(t *testing.T) {
	f, err := Parse("fence.json", []byte(`{"command": {"deny": ["git push"]}}`))
	require.NoError(t, err)
	assert.True(t, f.Config.Builtins)
	p, err := Compile(f.Config)
	require.NoError(t, err)
	decideCases(t, p, map[string]Decision{
		"chroot /mnt sh":               Deny,
		"unshare -r sh":                Deny,
		"nsenter -t 1 -m sh":           Deny,
		"dd if=/dev/zero of=x":         Deny, // fence denies every dd if=
		"init 6":                       Deny,
		"mkfs.btrfs /dev/x":            Deny,
		"docker run -v /:/host alpine": Deny,
		"dd of=/dev//sda":              Deny, // cordon's built-ins too
		"ls":                           Allow,
	})
	f, err = Parse("fence.json", []byte(`{"command": {"deny": ["git push"], "useDefaults": false}}`))
	require.NoError(t, err)
	p, err = Compile(f.Config)
	require.NoError(t, err)
	assert.Equal(t, Allow, decideArgv(p, fields("chroot /mnt sh")...).Decision)
	assert.Equal(t, Allow, decideArgv(p, fields("dd if=/dev/zero of=x")...).Decision)
}

func TestSSHCarrierByIdentity(t *testing.T) {
	p := compileRules(t, Allow, "deny ssh prod-*")
	assert.Contains(t, p.Programs(), "scp")
	fs := newFakeFiles()
	scp := FileID{Dev: 1, Ino: 42, Size: 100}
	fs.add("scp", scp)
	pf := p.WithFiles(fs)
	e := &Exec{Argv: fields("cp x prod-db:/tmp"), Path: "/tmp/cp", Resolved: "/tmp/cp", File: scp, Known: true}
	assert.Equal(t, Deny, pf.Decide(e).Decision, "a copy of scp named cp")
	assert.Equal(t, Allow, p.Decide(e).Decision, "by name alone it is cp")
}
