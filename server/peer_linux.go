package server

import (
	"context"
	"fmt"
	"net"
	"os"

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
		// Read now, while the connecting process is there to be read.
		p.sandboxed = proc.UnderCordonInit(p.pid, selfExe)
	})
	if cerr != nil {
		p.err = cerr
	}
	return context.WithValue(ctx, peerKey{}, p)
}
