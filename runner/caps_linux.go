package runner

import (
	"fmt"
	"os"
	"strings"

	"kernel.org/pub/linux/libs/security/libcap/cap"
)

// dropCapabilities gives up every capability the init holds, on all its
// threads, the way bubblewrap's --cap-drop ALL does for the bwrap tier:
// the landlock tier has no user namespace, so a command started by root
// would otherwise keep root's full capability set on the host (mknod a
// block device and write a filesystem below Landlock, change the host's
// network configuration, chown files outside the writable set).
//
// libcap's "NOPRIV" mode empties the bounding, ambient, inheritable,
// permitted and effective sets and locks the securebits (NOROOT,
// NO_SETUID_FIXUP, KEEP_CAPS off), so neither uid 0 nor an exec can get
// them back. The init is a Go program with several threads and
// capabilities are per thread: libcap changes them on every thread
// through psx, so whichever thread forks the command, the command has
// none. It fails closed: if a capability is still there afterwards, the
// run does not start.
func dropCapabilities() error {
	if os.Geteuid() != 0 && !holdsCapabilities() {
		// Nothing to drop; entering the mode would need CAP_SETPCAP.
		return nil
	}
	if err := cap.ModeNoPriv.Set(); err != nil {
		// Root without CAP_SETPCAP (a container started with
		// --cap-drop SETPCAP) cannot shrink the bounding set or lock
		// the securebits; it can still empty its own sets, and
		// no_new_privs (set before the ruleset) keeps exec from
		// raising them again.
		if err := cap.NewSet().SetProc(); err != nil {
			return fmt.Errorf("dropping capabilities: %w", err)
		}
		if err := cap.ResetAmbient(); err != nil {
			return fmt.Errorf("clearing ambient capabilities: %w", err)
		}
	}
	if holdsCapabilities() {
		return fmt.Errorf("dropping capabilities: the init still holds some (%s)", cap.GetProc())
	}
	return nil
}

// holdsCapabilities says whether this thread's effective, permitted,
// inheritable or ambient set is not empty. When it cannot tell, it says
// yes (fail closed).
func holdsCapabilities() bool {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range []string{"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"} {
			if v, ok := strings.CutPrefix(line, k); ok && strings.Trim(strings.TrimSpace(v), "0") != "" {
				return true
			}
		}
	}
	return false
}
