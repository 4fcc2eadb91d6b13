package runner

import (
	"os"
	"os/signal"
	"runtime"

	"golang.org/x/sys/unix"
)

// terminal hands the controlling terminal's foreground process group to the
// sandboxed command and takes it back. It is active only when stdin is a
// terminal and cordon is in its foreground group: a backgrounded cordon
// must not steal the terminal.
type terminal struct {
	fd    int
	pgrp  int           // cordon's own process group
	saved *unix.Termios // cordon's terminal modes, restored when done
	child *unix.Termios // the command's modes, kept across a suspend
}

func newTerminal(f *os.File) *terminal {
	if f == nil {
		return nil
	}
	fd := int(f.Fd())
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return nil
	}
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil
	}
	return &terminal{fd: fd, pgrp: unix.Getpgrp(), saved: saved}
}

// giveTo makes pgrp the foreground group.
func (t *terminal) giveTo(pgrp int) error {
	if t.child != nil {
		_ = unix.IoctlSetTermios(t.fd, unix.TCSETSW, t.child)
	}
	return t.setForeground(pgrp)
}

// takeBack makes cordon's group the foreground again and restores the modes
// cordon started with, remembering the command's.
func (t *terminal) takeBack() {
	if cur, err := unix.IoctlGetTermios(t.fd, unix.TCGETS); err == nil {
		t.child = cur
	}
	_ = t.setForeground(t.pgrp)
	_ = unix.IoctlSetTermios(t.fd, unix.TCSETSW, t.saved)
}

// setForeground calls tcsetpgrp. A background caller gets SIGTTOU from it
// unless the signal is ignored, so it is ignored for the call only; no
// process is started meanwhile, so no child inherits the disposition.
func (t *terminal) setForeground(pgrp int) error {
	signal.Ignore(unix.SIGTTOU)
	defer signal.Reset(unix.SIGTTOU)
	return unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgrp)
}

// suspend mirrors a job-control stop of the command onto cordon: the shell
// that started cordon sees it stop, and on `fg` the command gets the
// terminal back and is continued.
func (t *terminal) suspend(cmdPgrp int) {
	t.takeBack()
	// kill(getpid()) may be taken by another thread while this one runs
	// on; a signal directed at this thread stops it before tgkill returns,
	// so nothing below runs until the shell continues us.
	runtime.LockOSThread()
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGSTOP)
	runtime.UnlockOSThread()
	// Resumed by the shell (SIGCONT): hand the terminal back.
	_ = t.giveTo(cmdPgrp)
	_ = unix.Kill(-cmdPgrp, unix.SIGCONT)
}
