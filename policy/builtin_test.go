package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuiltin(t *testing.T) {
	for _, r := range Builtin() {
		assert.Equal(t, Deny, r.Decision, r.Pattern)
		assert.Equal(t, "builtin", r.Source, r.Pattern)
		assert.NotEmpty(t, r.Message, "%s: every built-in says why", r.Pattern)
	}
	p, err := Compile(Config{Default: Allow, Builtins: true})
	require.NoError(t, err)

	tests := []struct {
		argv string
		want Decision
	}{
		{"shutdown -h now", Deny},
		{"reboot", Deny},
		{"poweroff", Deny},
		{"systemctl reboot", Deny},
		{"systemctl --no-block poweroff", Deny},
		{"systemctl status", Allow},
		{"init 0", Deny},
		{"telinit 6", Deny},
		{"mkfs -t ext4 /dev/sda1", Deny},
		{"mkfs.ext4 /dev/sda1", Deny},
		{"mkfs.xfs /dev/sda1", Deny},
		{"mke2fs /dev/sda1", Deny},
		{"mkswap /dev/sda2", Deny},
		{"fdisk /dev/sda", Deny},
		{"parted /dev/sda mklabel gpt", Deny},
		{"wipefs -a /dev/sda", Deny},
		{"dd if=/dev/zero of=/dev/sda bs=1M", Deny},
		{"dd if=/dev/zero of=/dev/nvme0n1", Deny},
		{"dd if=/dev/zero of=/dev/null count=1", Allow},
		{"dd if=/dev/urandom of=./file count=1", Allow},
		{"shred /dev/sdb", Deny},
		{"shred ./secret.txt", Allow},
		{"insmod evil.ko", Deny},
		{"modprobe -r snd", Deny},
		{"kexec -l vmlinuz", Deny},
		{"docker run --privileged alpine", Deny},
		{"podman run -v /:/host alpine", Deny},
		{"docker run --volume=/:/host alpine", Deny},
		{"docker run -v /srv:/data alpine", Allow},
		{"docker ps", Allow},
		{"ls -la", Allow},
	}
	for _, tc := range tests {
		t.Run(tc.argv, func(t *testing.T) {
			r := decideArgv(p, fields(tc.argv)...)
			assert.Equal(t, tc.want, r.Decision, r.RuleText())
		})
	}
}
