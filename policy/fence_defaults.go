package policy

// fenceDefaultDeny is fence's default deny list (its command.useDefaults,
// on unless a config turns it off), entry for entry as fence defines it,
// written as cordon rules. A fence config gets it in addition to cordon's
// own built-in list, so an imported config denies at least what it denied
// under fence. Fence matches an entry against a command line's leading
// words; cordon's deny rules match those words loosely, which covers the
// same command lines and the other spellings of them.
var fenceDefaultDeny = []struct{ pattern, why string }{
	{"{shutdown,reboot,halt,poweroff}", "system control"},
	{"init {0,6}", "system control"},
	{"systemctl {poweroff,reboot,halt}", "system control"},
	{"{insmod,rmmod,modprobe,kexec}", "kernel module manipulation"},
	{"{mkfs,mkfs.ext2,mkfs.ext3,mkfs.ext4,mkfs.xfs,mkfs.btrfs,mkfs.vfat,mkfs.ntfs}", "disk manipulation"},
	{"{fdisk,parted}", "partition manipulation"},
	{"dd if=", "disk manipulation (fence denies every dd that reads with if=)"},
	{"docker run {-v,--volume}=/:/*", "container escape: the host's root mounted"},
	{"docker run --privileged", "container escape: a privileged container"},
	{"{chroot,unshare,nsenter}", "namespace escape"},
}

// fenceDefaults returns fenceDefaultDeny as rules.
func fenceDefaults() []Rule {
	out := make([]Rule, len(fenceDefaultDeny))
	for i, b := range fenceDefaultDeny {
		out[i] = Rule{Decision: Deny, Pattern: b.pattern, Message: "fence default: " + b.why, Source: "fence-default"}
	}
	return out
}
