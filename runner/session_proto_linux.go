package runner

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// Session mode. After the configuration (Session set) and the listener, the
// host sends spawn requests and the init answers each with, in this order:
// spawned (or exec-failed when nothing could be started), exec-failed when
// the program could not be run, child-exited with the leader's wait status,
// and gone once the process's whole tree is empty. gone is always last.
const (
	msgSpawn      = "spawn"        // host: start a process; descriptors: the child's fds
	msgSpawned    = "spawned"      // init: ns pids; descriptors: the leader's and the shim's pidfds
	msgExecFailed = "exec-failed"  // init: the program could not be started; Op and Errno say why
	msgChildExit  = "child-exited" // init: the leader's wait status
	msgGone       = "gone"         // init: the tree is empty; Status is the shim's own wait status
)

// sessMsg is a session-mode message in either direction. Strings that name
// files or come from the caller travel as bytes, as in wireConfig.
type sessMsg struct {
	Kind string   `json:"kind"`
	ID   string   `json:"id,omitempty"`
	Argv [][]byte `json:"argv,omitempty"`
	Env  [][]byte `json:"env,omitempty"`
	Dir  []byte   `json:"dir,omitempty"`
	// Targets are the descriptor numbers, in the child, of the NFDs
	// descriptors sent with a spawn, in order.
	Targets []int `json:"targets,omitempty"`
	// NFDs is how many descriptors travel with this message. A stream read
	// can return the bytes of several frames and the descriptors of one of
	// them, so descriptors are queued as they arrive and each frame takes
	// its own, in order (see recvQueued).
	NFDs   int    `json:"nfds,omitempty"`
	Pid    int    `json:"pid,omitempty"`  // spawned: the leader, in the sandbox's pid namespace
	Shim   int    `json:"shim,omitempty"` // spawned: the leader's monitor (see spawn_unsafe.go)
	Op     string `json:"op,omitempty"`   // exec-failed: lookup, chdir, exec or spawn
	Errno  int    `json:"errno,omitempty"`
	Status uint32 `json:"status"`
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
		n, oobn, _, _, err := fc.c.ReadMsgUnix(buf, oob)
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

// sendAll is send for frames of any size: a stream socket may take only
// part of a large frame in one sendmsg (the descriptors ride with the
// first part), and the rest follows.
func (fc *frameConn) sendAll(v any, fds ...int) error {
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
		n, _, err = fc.c.WriteMsgUnix(frame, unix.UnixRights(fds...), nil)
		if err != nil {
			return err
		}
	}
	if n < len(frame) {
		_, err = fc.c.Write(frame[n:])
	}
	return err
}
