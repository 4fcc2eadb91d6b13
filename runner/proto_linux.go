package runner

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// The control channel is a SOCK_STREAM socketpair inherited by the init as
// fd ctlFD. Messages are JSON frames with a 4-byte big-endian length. The one
// message that carries a file descriptor (the seccomp listener) is small and
// the init waits for an answer after sending it, so its SCM_RIGHTS data
// always arrives with the read that holds its frame.
const (
	ctlFD    = 3 // control socket in the init
	stderrFD = 4 // the user's real stderr in the init (bwrap's own goes to the host)

	maxFrame = 64 << 20
)

// configMsg is the host's first message: everything the init needs.
type configMsg struct {
	Argv   []string `json:"argv"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir"`
	Filter []byte   `json:"filter"`
	// Fallback is the filter to install when Filter's listener cannot be
	// had (EBUSY): execs are then supervised with ptrace only.
	Fallback []byte `json:"fallback"`
	// Reap asks the init to kill and reap every descendant after the command
	// exits; without a pid namespace nothing else would.
	Reap bool `json:"reap"`
	// Session selects the session mode (see session_init_linux.go): no
	// command of its own; the init spawns processes on request.
	Session bool `json:"session,omitempty"`
	// Landlock, when set, is the ruleset the init applies to itself
	// before the filter (the landlock tier).
	Landlock *landlockSpec `json:"landlock,omitempty"`
	// NetListen asks the init for the proxy listeners on the sandbox's
	// loopback (--net filter), sent with the notify listener.
	NetListen bool `json:"net_listen,omitempty"`
	// LastPid asks the init to answer the host's requests for its pid
	// namespace's counter on lastPidFD (bubblewrap's tier: see
	// lastpid_linux.go).
	LastPid bool `json:"last_pid,omitempty"`
	// ScopeSignals asks the init to start every command in a Landlock
	// layer that scopes signals only (every tier but none, from Landlock
	// ABI 6: see scopeRuleset).
	ScopeSignals bool `json:"scope_signals,omitempty"`
}

// wireConfig is configMsg as it travels: JSON strings would replace bytes
// that are not UTF-8 (a file name in Latin-1, an odd environment value), so
// argv, env and the directory travel as bytes (base64 in JSON).
type wireConfig struct {
	Argv         [][]byte      `json:"argv"`
	Env          [][]byte      `json:"env"`
	Dir          []byte        `json:"dir"`
	Filter       []byte        `json:"filter"`
	Fallback     []byte        `json:"fallback"`
	Reap         bool          `json:"reap"`
	Session      bool          `json:"session,omitempty"`
	NetListen    bool          `json:"net_listen,omitempty"`
	LastPid      bool          `json:"last_pid,omitempty"`
	Landlock     *wireLandlock `json:"landlock,omitempty"`
	ScopeSignals bool          `json:"scope_signals,omitempty"`
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func fromBytes(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// MarshalJSON keeps every byte of argv, env and dir.
func (c configMsg) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireConfig{Argv: toBytes(c.Argv), Env: toBytes(c.Env), Dir: []byte(c.Dir), Filter: c.Filter, Fallback: c.Fallback, Reap: c.Reap, Session: c.Session, NetListen: c.NetListen, LastPid: c.LastPid, Landlock: c.Landlock.wire(), ScopeSignals: c.ScopeSignals})
}

// UnmarshalJSON is the inverse of MarshalJSON.
func (c *configMsg) UnmarshalJSON(b []byte) error {
	var w wireConfig
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = configMsg{Argv: fromBytes(w.Argv), Env: fromBytes(w.Env), Dir: string(w.Dir), Filter: w.Filter, Fallback: w.Fallback, Reap: w.Reap, Session: w.Session, NetListen: w.NetListen, LastPid: w.LastPid, Landlock: w.Landlock.spec(), ScopeSignals: w.ScopeSignals}
	return nil
}

// Message kinds sent by the init.
const (
	msgHello    = "hello"       // the init's first message: its pid (the credentials), before any set-up
	msgListener = "listener"    // carries the notify listener fd
	msgSetupErr = "setup-error" // the init could not set up; Message says why
	msgExecErr  = "exec-error"  // the command could not be started; Errno says why
	msgStarted  = "started"
	msgStopped  = "stopped" // the command was stopped by a signal (job control)
	msgExited   = "exited"  // the command exited; Status is its wait status
	msgHostGo   = "go"      // host: supervisor running, terminal handed over
)

type initMsg struct {
	Kind    string `json:"kind"`
	Errno   int    `json:"errno,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message,omitempty"`
	Status  uint32 `json:"status,omitempty"`
	Signal  int    `json:"signal,omitempty"`
	// PtraceOnly, on msgListener, says that no listener could be had
	// (another one exists above us): no fd comes with the message.
	PtraceOnly bool `json:"ptrace_only,omitempty"`
	// NetListeners, on msgListener, counts the descriptors of the network
	// filter sent after the notify listener: the HTTP and SOCKS listeners
	// and the sock_diag socket.
	NetListeners int `json:"net_listeners,omitempty"`
}

// frameConn sends and receives frames, with descriptors and the sender's
// credentials (SO_PASSCRED) collected from ancillary data.
//
// The host's end goes through the runtime's network poller (net.UnixConn):
// closing it ends a read in progress, and the host may run many sandboxes.
// The init's end is a blocking socket used with plain system calls
// (newInitConn): the init's main goroutine is locked to its thread, and a
// read parked in the poller is woken through another thread, which then
// hands the goroutine back to the locked one (measured: "go" reached the
// command's start 0.4 ms after the host sent it, 0.2 ms with a blocking
// read). Callers send one frame at a time, as before.
type frameConn struct {
	raw  int // the init's blocking socket, or -1: c is used
	c    *net.UnixConn
	rbuf []byte
	fds  []int
	pid  int32 // sender pid from the last SCM_CREDENTIALS, in our pid namespace
}

func newFrameConn(f *os.File) (*frameConn, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("wrapping control socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("control fd is not a unix socket")
	}
	return &frameConn{c: uc, raw: -1}, nil
}

// newInitConn is the init's end of the control channel: fd, made blocking
// (see frameConn). It is never closed: the init's exit closes it.
func newInitConn(fd int) (*frameConn, error) {
	if err := unix.SetNonblock(fd, false); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return &frameConn{raw: fd}, nil
}

// send writes one frame, with fds as SCM_RIGHTS data. A stream socket may
// take only part of a large frame in one sendmsg (the descriptors ride with
// the first part); the rest follows.
func (fc *frameConn) send(v any, fds ...int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding control message: %w", err)
	}
	if len(b) > maxFrame {
		return fmt.Errorf("control message of %d bytes", len(b))
	}
	frame := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(frame, uint32(len(b)))
	copy(frame[4:], b)
	n := 0
	if len(fds) > 0 {
		// The descriptors ride with the first part.
		if n, err = fc.sendmsg(frame, unix.UnixRights(fds...)); err != nil {
			return err
		}
	}
	for n < len(frame) {
		m, err := fc.sendmsg(frame[n:], nil)
		if err != nil {
			return err
		}
		n += m
	}
	return nil
}

// sendmsg is one sendmsg(2) on either kind of end (see frameConn).
func (fc *frameConn) sendmsg(b, oob []byte) (int, error) {
	if fc.raw < 0 {
		n, _, err := fc.c.WriteMsgUnix(b, oob, nil)
		return n, err
	}
	for {
		n, err := unix.SendmsgN(fc.raw, b, oob, nil, 0)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// recv decodes the next frame into v and returns every descriptor received
// so far (the one-shot protocol sends at most one frame with descriptors and
// waits for an answer after it). It returns io.EOF when the peer is gone.
func (fc *frameConn) recv(v any) ([]int, error) {
	err := fc.recvQueued(v)
	fds := fc.fds
	fc.fds = nil
	if err != nil {
		closeAll(fds)
		return nil, err
	}
	return fds, nil
}

// recvQueued decodes the next frame into v and leaves the descriptors that
// arrived so far queued; the caller takes the frame's own with takeFDs.
//
// Preconditions: every frame that carries descriptors was sent with them in
// one sendmsg, so they arrive no later than the frame's first byte.
func (fc *frameConn) recvQueued(v any) error {
	for {
		if len(fc.rbuf) >= 4 {
			n := int(binary.BigEndian.Uint32(fc.rbuf))
			if n > maxFrame {
				return fmt.Errorf("control frame of %d bytes", n)
			}
			if len(fc.rbuf) >= 4+n {
				err := json.Unmarshal(fc.rbuf[4:4+n], v)
				fc.rbuf = fc.rbuf[4+n:]
				if err != nil {
					return fmt.Errorf("decoding control message: %w", err)
				}
				return nil
			}
		}
		// Small: a session's reader sits in this read for the session's
		// whole life; a larger frame is assembled in rbuf.
		buf := make([]byte, 8<<10)
		oob := make([]byte, 512)
		var n, oobn int
		var err error
		if fc.raw >= 0 {
			n, oobn, _, _, err = unix.Recvmsg(fc.raw, buf, oob, unix.MSG_CMSG_CLOEXEC)
			if err == unix.EINTR {
				continue
			}
		} else {
			n, oobn, _, _, err = fc.c.ReadMsgUnix(buf, oob)
		}
		if oobn > 0 {
			fc.parseOOB(oob[:oobn])
		}
		if n > 0 {
			fc.rbuf = append(fc.rbuf, buf[:n]...)
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return io.EOF
		}
	}
}

// takeFDs removes the n oldest queued descriptors and returns them.
func (fc *frameConn) takeFDs(n int) ([]int, error) {
	if n < 0 || n > len(fc.fds) {
		return nil, fmt.Errorf("control message announces %d descriptors, %d arrived", n, len(fc.fds))
	}
	fds := append([]int(nil), fc.fds[:n]...)
	fc.fds = fc.fds[n:]
	return fds, nil
}

func (fc *frameConn) parseOOB(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for i := range msgs {
		if fds, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			for _, fd := range fds {
				unix.CloseOnExec(fd)
			}
			fc.fds = append(fc.fds, fds...)
			continue
		}
		if cred, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
			fc.pid = cred.Pid
		}
	}
}

// close ends the channel: for the init's end, a shutdown, which ends a
// read in progress as EOF (its descriptor stays until the init exits).
func (fc *frameConn) close() error {
	if fc.raw >= 0 {
		return unix.Shutdown(fc.raw, unix.SHUT_RDWR)
	}
	return fc.c.Close()
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
