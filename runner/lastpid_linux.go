package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The sandbox's pid counter.
//
// Strict mode's listing of the sandbox's processes sees pid numbers wrap
// around behind it by the last pid allocated going down
// (supervisor.Options.LastPid). The kernel answers a read of
// /proc/sys/kernel/ns_last_pid for the pid namespace of the task that
// reads it, not for the proc mount's: in bubblewrap's tier, where the
// sandbox has a pid namespace of its own, only a process of that namespace
// can read its counter. The init answers: the host sends a request on a
// socket pair of its own (lastPidFD in the init, passed at start), and a
// goroutine of the init replies with the counter it read.
//
// A request is an 8-byte sequence number; the reply is that number and
// the counter (or minus the errno of a failed read), 8 bytes each, little
// endian. The sequence number tells a late reply to an earlier request
// that timed out from the answer to this one.

// lastPidFD is the init's end of the pid counter's socket pair (the
// bubblewrap tier only): the fourth descriptor bubblewrap inherits after
// stdio, after argsFD.
const lastPidFD = 6

// lastPidWait bounds how long a decision waits for the init's answer. The
// init answers in microseconds; a loaded machine may take milliseconds,
// and no answer refuses the exec.
const lastPidWait = 500 * time.Millisecond

const (
	lastPidReq   = 8
	lastPidReply = 16
)

// lastPidClient asks the init for its pid namespace's counter.
type lastPidClient struct {
	mu  sync.Mutex // one request at a time; guards fd and seq
	fd  int        // the host's end (non-blocking), or -1 once closed
	seq uint64
}

// newLastPidPair makes the pid counter's socket pair: the host's end, and
// the init's end to pass as lastPidFD (close it once the sandbox started).
func newLastPidPair() (*lastPidClient, *os.File, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	if err := unix.SetNonblock(pair[0], true); err != nil {
		unix.Close(pair[0])
		unix.Close(pair[1])
		return nil, nil, os.NewSyscallError("fcntl(O_NONBLOCK)", err)
	}
	return &lastPidClient{fd: pair[0]}, os.NewFile(uintptr(pair[1]), "lastpid-child"), nil
}

// get returns the last pid allocated in the sandbox's pid namespace, or an
// error when the init does not answer within lastPidWait.
func (c *lastPidClient) get() (int, error) {
	n, err := c.ask()
	if err != nil {
		return 0, fmt.Errorf("asking the sandbox's init for its pid namespace's last pid: %w", err)
	}
	return n, nil
}

func (c *lastPidClient) ask() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return 0, errors.New("the sandbox is closed")
	}
	c.seq++
	var req [lastPidReq]byte
	binary.LittleEndian.PutUint64(req[:], c.seq)
	if _, err := unix.Write(c.fd, req[:]); err != nil {
		// EAGAIN: requests are queued that the init does not read.
		return 0, os.NewSyscallError("write", err)
	}
	deadline := time.Now().Add(lastPidWait)
	var rep [lastPidReply + 1]byte // one more: a longer reply is malformed
	for {
		n, err := unix.Read(c.fd, rep[:])
		switch {
		case err == unix.EAGAIN:
			left := time.Until(deadline)
			if left <= 0 {
				return 0, fmt.Errorf("no answer within %v", lastPidWait)
			}
			fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, int((left+time.Millisecond-1)/time.Millisecond)); err != nil && err != unix.EINTR {
				return 0, os.NewSyscallError("poll", err)
			}
			continue
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0:
			return 0, errors.New("the init is gone")
		case n != lastPidReply:
			return 0, fmt.Errorf("a reply of %d bytes, want %d", n, lastPidReply)
		}
		if binary.LittleEndian.Uint64(rep[:8]) != c.seq {
			continue // the late answer to a request that timed out
		}
		v := int64(binary.LittleEndian.Uint64(rep[8:lastPidReply]))
		if v < 0 {
			return 0, fmt.Errorf("the init could not read its counter: %w", unix.Errno(-v))
		}
		return int(v), nil
	}
}

// close closes the host's end, after any request in progress; get fails
// from then on.
func (c *lastPidClient) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// serveLastPid answers, on another goroutine, the host's requests on fd
// (lastPidFD) with the last pid allocated in the init's own pid namespace,
// until the host closes its end. The counter's file is opened now, before
// the filter is installed, and read again (pread) at every request.
func serveLastPid(fd int) error {
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_SEQPACKET {
		return fmt.Errorf("descriptor %d is not the pid counter's socket (type %d, %v)", fd, typ, err)
	}
	counter, err := unix.Open("/proc/sys/kernel/ns_last_pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the sandbox's pid counter: %w", os.NewSyscallError("open", err))
	}
	go func() {
		defer unix.Close(fd)
		defer unix.Close(counter)
		var req [lastPidReq]byte
		var rep [lastPidReply]byte
		buf := make([]byte, 32)
		for {
			n, err := unix.Read(fd, req[:])
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				return // the host closed its end
			}
			if n != lastPidReq {
				continue // not a request: no answer (the host times out)
			}
			copy(rep[:8], req[:])
			binary.LittleEndian.PutUint64(rep[8:], uint64(readCounter(counter, buf)))
			for {
				if _, err := unix.Write(fd, rep[:]); err != unix.EINTR {
					break
				}
			}
		}
	}()
	return nil
}

// readCounter reads the pid counter file fd from its start: the counter,
// or minus the errno of a failed read.
func readCounter(fd int, buf []byte) int64 {
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		var errno unix.Errno
		if !errors.As(err, &errno) || errno == 0 {
			errno = unix.EIO
		}
		return -int64(errno)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	if err != nil || v < 0 {
		return -int64(unix.EINVAL)
	}
	return v
}
