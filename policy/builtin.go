package policy

// builtinDeny is the built-in deny list: destructive system commands that no
// agent workload needs. Each entry says why it is here; the README lists
// them. It applies unless the policy sets "defaults: false" (or
// --no-defaults). A rule naming a program by a glob (mkfs.*) matches the
// executable's name only; the literal names next to it are also recognised
// under other names through file identity.
var builtinDeny = []struct{ pattern, why string }{
	// Power state: stopping or restarting the machine ends everyone's work.
	{"{shutdown,reboot,halt,poweroff}", "powers off or restarts the machine"},
	{"@power-off", "changes the machine's power state or drops it to single-user mode " +
		"(systemctl verbs and targets, loginctl, D-Bus calls to logind or systemd)"},
	{"{init,telinit} {0,1,6,s,S}", "changes the runlevel: halt, single-user or reboot"},
	// Disks and filesystems: these destroy data on whole devices.
	{"{mkfs,mkfs.*,mke2fs,mkswap,mkdosfs,mkntfs}", "creates a filesystem, erasing the device"},
	{"{fdisk,sfdisk,cfdisk,gdisk,sgdisk,parted}", "rewrites partition tables"},
	{"{wipefs,blkdiscard}", "erases filesystem signatures or discards every block of a device"},
	{"@block-device-write", "writes raw data over a block device"},
	// Kernel: loading code into the kernel or replacing it.
	{"{insmod,rmmod,modprobe}", "loads or unloads kernel modules"},
	{"kexec", "boots another kernel in place of the running one"},
	// Containers with the host's privileges: an escape from any sandbox.
	{"@privileged-container", "runs a container with the host's privileges or its root filesystem"},
}

// blockDevices matches the names of disk-like devices under /dev, leaving
// out /dev/null, /dev/zero, /dev/stdout and the like that dd and shred are
// routinely pointed at.
const blockDevices = "{sd*,hd*,vd*,xvd*,nvme*,mmcblk*,dm-*,md*,loop*,mapper/*,disk/*,mtd*,sr*,nbd*,zd*}"

// Builtin returns the built-in deny rules, in order.
func Builtin() []Rule {
	rules := make([]Rule, len(builtinDeny))
	for i, b := range builtinDeny {
		rules[i] = Rule{Decision: Deny, Pattern: b.pattern, Message: b.why, Source: "builtin"}
	}
	return rules
}
