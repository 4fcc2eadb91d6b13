package policy

// builtinDeny lists destructive system commands that no agent workload needs:
// powering the machine off, rewriting disks and partition tables, and loading
// kernel code. It applies unless the user opts out (--no-defaults).
var builtinDeny = []string{
	"shutdown", "reboot", "halt", "poweroff",
	"systemctl poweroff", "systemctl reboot", "systemctl halt", "systemctl kexec",
	"init 0", "init 6", "telinit 0", "telinit 6",
	"mkfs", "mke2fs", "mkswap", "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted", "wipefs",
	"insmod", "rmmod", "modprobe", "kexec",
}

// Builtin returns the built-in deny rules.
func Builtin() []Rule {
	rules := make([]Rule, len(builtinDeny))
	for i, p := range builtinDeny {
		rules[i] = Rule{Decision: Deny, Pattern: p, Source: "builtin"}
	}
	return rules
}
