package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"golang.org/x/sys/unix"
)

// selfExe is the daemon's own executable: a client below a process running
// it was started by a cordon (a sandbox's), not by the user.
var selfExe, _ = os.Executable()

// ConnContext records the peer's credentials (SO_PEERCRED) of a Unix
// socket connection for the access rules; set it as http.Server's
// ConnContext. The kernel fills them in at connect time, so the client
// cannot choose them.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	p := peer{uid: -1}
	raw, err := uc.SyscallConn()
	if err != nil {
		p.err = err
		return context.WithValue(ctx, peerKey{}, p)
	}
	cerr := raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			p.err = fmt.Errorf("getsockopt(SO_PEERCRED): %w", err)
			return
		}
		p.uid, p.pid = int(cred.Uid), int(cred.Pid)
		p.foreign = sameNamespaces(int(fd), p.pid)
		// Read now, while the connecting process is there to be read.
		p.sandboxed = proc.UnderCordonInit(p.pid, selfExe)
	})
	if cerr != nil {
		p.err = cerr
	}
	return context.WithValue(ctx, peerKey{}, p)
}

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5): a pidfd of the process that
// connected, which stays bound to that process when its pid is reused.
// golang.org/x/sys/unix does not name it yet.
const soPeerPidfd = 77

// sameNamespaces checks that the process that connected on fd (pid, from
// SO_PEERCRED) shares the daemon's pid and mount namespaces. A sandbox's
// processes never do (bwrap gives them their own), so even a socket a
// sandbox can see (one made after it started, which nothing hid) serves
// it nothing. A peer whose namespaces cannot be read is refused (pid 0:
// the peer is in a pid namespace the daemon cannot see into).
func sameNamespaces(fd, pid int) error {
	if pid <= 0 {
		return fmt.Errorf("the client's pid is not visible from the daemon's pid namespace")
	}
	// With a pidfd, the check is about that very process: its pid read
	// back from the pidfd, and it still alive after /proc was read, so a
	// pid reused by a host process in between cannot pass for it.
	pidfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, soPeerPidfd)
	havePidfd := err == nil
	if havePidfd {
		defer unix.Close(pidfd)
		if pid, err = pidfdPid(pidfd); err != nil {
			return err
		}
	} else if !errors.Is(err, unix.ENOPROTOOPT) {
		return fmt.Errorf("getsockopt(SO_PEERPIDFD): %w", err)
	}
	for _, ns := range []string{"pid", "mnt"} {
		mine, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return fmt.Errorf("reading the daemon's %s namespace: %w", ns, err)
		}
		theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err != nil {
			return fmt.Errorf("reading the %s namespace of the client (pid %d): %w", ns, pid, err)
		}
		if mine != theirs {
			return fmt.Errorf("the client (pid %d) runs in another %s namespace (%s, the daemon's is %s): a sandbox may not use the daemon", pid, ns, theirs, mine)
		}
	}
	if havePidfd {
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return fmt.Errorf("the client (pid %d) exited before its namespaces were checked: %w", pid, err)
		}
	}
	return nil
}

// pidfdPid reads the pid a pidfd refers to (the Pid: line of its fdinfo;
// -1 once the process has exited).
func pidfdPid(pidfd int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/self/fdinfo/%d", pidfd))
	if err != nil {
		return 0, fmt.Errorf("reading the client's pidfd: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("the client has exited or is not visible from the daemon (pidfd pid %q)", strings.TrimSpace(v))
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("the client's pidfd has no Pid line")
}
