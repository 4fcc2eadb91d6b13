package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sessionMain is the init's session mode. It installs the filter and hands
// the listener to the host like the one-shot mode, then serves spawn
// requests until the host closes the control socket. Each process is
// started under a shim of its own (spawn_unsafe.go) that reports the
// leader's pid, exec outcome and wait status; the init forwards those and
// says "gone" once the shim, and so the process's whole tree, has exited.
// The init stays the namespace's subreaper for whatever escapes a shim (a
// shim that was killed leaves its tree to the init) and reaps it.
func sessionMain(conn *frameConn, cfg configMsg, stderrFd int) int {
	scope, err := scopeRuleset(cfg.ScopeSignals)
	if err != nil {
		_ = conn.send(initMsg{Kind: msgSetupErr, Message: err.Error()})
		return 125
	}
	if code := installFilter(conn, cfg); code != 0 {
		return code
	}
	unix.Close(stderrFd) // nothing to hand to a command: each process brings its own fds

	si := &sessInit{
		bare:    cfg.Reap,
		scope:   scope,
		conn:    conn,
		kick:    make(chan struct{}, 1),
		shims:   make(map[int]*shimState),
		orphans: make(map[int]string),
	}
	go si.reap()
	for {
		var m sessMsg
		if err := conn.recvQueued(&m); err != nil {
			// The host closed the session (or died): returning ends the
			// init, bwrap's pid 1 follows, and the kernel kills what is
			// left in the namespace. Without one (Reap), the init kills
			// its descendants itself.
			if cfg.Reap {
				killDescendants()
			}
			return 0
		}
		fds, err := conn.takeFDs(m.NFDs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cordon init: %v\n", err)
			return 125
		}
		switch m.Kind {
		case msgSpawn:
			si.spawn(&m, fds)
		default:
			closeAll(fds)
		}
	}
}

type sessInit struct {
	conn *frameConn
	// bare: no bubblewrap (the leader is made dumpable for the
	// supervisor's ptrace, see spawn_unsafe.go).
	bare bool
	// scope is the landlock tier's scope ruleset for every leader, or -1
	// (scopeRuleset).
	scope  int
	sendMu sync.Mutex // one frame at a time on conn
	kick   chan struct{}

	mu sync.Mutex
	// shims maps a shim's pid to its process; guarded by mu.
	shims map[int]*shimState
	// orphans maps the pid of a leader whose shim died before reporting its
	// exit to the process id, so the init reports it when it reaps the
	// leader; guarded by mu.
	orphans map[int]string
}

type shimState struct {
	id     string
	reaped chan struct{} // closed by the reaper
	status unix.WaitStatus

	mu       sync.Mutex
	leader   int  // guarded by mu
	reported bool // guarded by mu: the leader's exit was forwarded
}

func (si *sessInit) send(m sessMsg, fds ...int) {
	si.sendMu.Lock()
	defer si.sendMu.Unlock()
	m.NFDs = len(fds)
	_ = si.conn.send(m, fds...)
}

func (si *sessInit) failed(id, op string, errno syscall.Errno) {
	si.send(sessMsg{Kind: msgExecFailed, ID: id, Op: op, Errno: int(errno)})
	si.send(sessMsg{Kind: msgGone, ID: id})
}

func (si *sessInit) spawn(m *sessMsg, fds []int) {
	defer closeAll(fds)
	if len(m.Argv) == 0 || len(fds) != len(m.Targets) {
		si.failed(m.ID, "spawn", unix.EINVAL)
		return
	}
	argv, env, dir := fromBytes(m.Argv), fromBytes(m.Env), string(m.Dir)
	path, errno := lookPath(argv[0], dir, env)
	if errno != 0 {
		si.failed(m.ID, "lookup", errno)
		return
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		si.failed(m.ID, "spawn", errnoOf(err))
		return
	}
	st := &shimState{id: m.ID, reaped: make(chan struct{})}
	// Held across the fork: the reaper must find the shim registered
	// however fast it exits.
	si.mu.Lock()
	pid, pidfd, err := cSpawn(&spawnSpec{path: path, argv: argv, env: env, dir: dir, src: fds, dst: m.Targets, report: pair[1], dumpable: si.bare, scope: si.scope})
	if err == nil {
		si.shims[pid] = st
	}
	si.mu.Unlock()
	unix.Close(pair[1])
	if err != nil {
		unix.Close(pair[0])
		si.failed(m.ID, "spawn", errnoOf(err))
		return
	}
	select {
	case si.kick <- struct{}{}:
	default:
	}
	go si.watch(st, pid, pidfd, pair[0])
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}

var stageOps = map[int32]string{stageSpawn: "spawn", stageChdir: "chdir", stageExec: "exec", stageScope: "landlock_restrict_self"}

// watch forwards one shim's reports, then "gone" once the reaper has
// collected the shim.
func (si *sessInit) watch(st *shimState, shimPid, shimPidfd, sock int) {
	f := os.NewFile(uintptr(sock), "shim-report")
	c, err := net.FileConn(f)
	f.Close()
	sent := false
	if err == nil {
		uc := c.(*net.UnixConn)
		buf := make([]byte, 64)
		oob := make([]byte, unix.CmsgSpace(4*4))
		for {
			n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
			if err != nil || (n == 0 && oobn == 0) {
				break // EOF: the shim exited
			}
			var fds []int
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for i := range msgs {
					if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
						fds = append(fds, got...)
					}
				}
			}
			if n != shimMsgSize {
				closeAll(fds)
				continue
			}
			var v [5]int32
			for i := range v {
				v[i] = int32(binary.NativeEndian.Uint32(buf[4*i:]))
			}
			kind, pid, stage, errno, status := v[0], v[1], v[2], v[3], v[4]
			switch kind {
			case shimForked:
				if len(fds) != 1 {
					closeAll(fds)
					continue
				}
				st.mu.Lock()
				st.leader = int(pid)
				st.mu.Unlock()
				si.send(sessMsg{Kind: msgSpawned, ID: st.id, Pid: int(pid), Shim: shimPid}, fds[0], shimPidfd)
				closeAll(fds)
				unix.Close(shimPidfd)
				sent = true
			case shimExec:
				closeAll(fds)
				if errno != 0 {
					si.send(sessMsg{Kind: msgExecFailed, ID: st.id, Op: stageOps[stage], Errno: int(errno)})
				}
			case shimExited:
				closeAll(fds)
				st.mu.Lock()
				st.reported = true
				st.mu.Unlock()
				si.send(sessMsg{Kind: msgChildExit, ID: st.id, Status: uint32(status)})
			default:
				closeAll(fds)
			}
		}
		uc.Close()
	} else {
		unix.Close(sock)
	}
	if !sent {
		unix.Close(shimPidfd)
	}
	<-st.reaped
	si.send(sessMsg{Kind: msgGone, ID: st.id, Status: uint32(st.status)})
}

// reap collects every child of the init: shims, and the orphans of a shim
// that was killed (they re-parent to the init, the namespace's subreaper).
// One owner reaps: nothing else in the session init waits for children.
func (si *sessInit) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ECHILD:
			<-si.kick
			continue
		case err != nil:
			time.Sleep(10 * time.Millisecond)
			continue
		}
		si.mu.Lock()
		st := si.shims[pid]
		delete(si.shims, pid)
		orphanOf, isOrphan := si.orphans[pid]
		delete(si.orphans, pid)
		if st != nil && ws.Signaled() {
			// The shim was killed (by the workload: it runs as the same
			// user): its tree is now the init's. Report the leader's exit
			// when it comes here.
			st.mu.Lock()
			if !st.reported && st.leader > 0 {
				si.orphans[st.leader] = st.id
			}
			st.mu.Unlock()
		}
		si.mu.Unlock()
		switch {
		case st != nil:
			st.status = ws
			close(st.reaped)
		case isOrphan:
			si.send(sessMsg{Kind: msgChildExit, ID: orphanOf, Status: uint32(ws)})
		}
	}
}
