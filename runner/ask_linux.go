package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

// AskTerminal returns an Options.Ask that asks the user on cordon's own
// controlling terminal (/dev/tty), never on the command's stdin, which the
// command may control. The prompt is
//
//	cordon: allow? npm publish (rule: ask "npm publish") [y/N]
//
// and only y or yes allows. No answer within timeout denies, and so does
// having no terminal: that is reported on warn once per question.
//
// While the command runs, its process group owns the terminal's foreground
// and cordon is in the background. To prompt, cordon takes the foreground
// (a background tcsetpgrp needs SIGTTOU ignored), puts the terminal in
// canonical mode with echo, reads one line, then restores the modes and
// gives the foreground back to the group that had it, which may be a job
// of a shell inside the sandbox rather than the command itself.
func AskTerminal(timeout time.Duration, warn io.Writer) func(*supervisor.Verdict) bool {
	return func(d *supervisor.Verdict) bool {
		askMu.Lock()
		defer askMu.Unlock()
		question := supervisor.FormatArgv(d.Exec.Argv) + " (rule: " + d.Result.RuleText() + ")"
		ok, err := askTTY(question, timeout)
		if err != nil {
			fmt.Fprintf(warn, "cordon: warning: --ask tty: %v; denying %s\n", err, supervisor.FormatArgv(d.Exec.Argv))
		}
		return ok
	}
}

// AskTerminalNet is AskTerminal for network ask rules: the prompt is
//
//	cordon: allow? connect example.com:443 by curl https://example.com (rule: ask "*") [y/N]
func AskTerminalNet(timeout time.Duration, warn io.Writer) func(*netproxy.Record) bool {
	return func(r *netproxy.Record) bool {
		askMu.Lock()
		defer askMu.Unlock()
		line := strings.TrimPrefix(NetDenialLine(r), "cordon: denied: ")
		ok, err := askTTY(line, timeout)
		if err != nil {
			fmt.Fprintf(warn, "cordon: warning: --ask tty: %v; denying %s\n", err, line)
		}
		return ok
	}
}

// askMu puts one question on the terminal at a time.
var askMu sync.Mutex

// errNoAnswer is an ask that timed out.
var errNoAnswer = errors.New("no answer")

// askTTY prompts on /dev/tty and reports whether the answer was yes.
func askTTY(question string, timeout time.Duration) (bool, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("no terminal to ask on: %w", err)
	}
	defer tty.Close()
	t := &terminal{fd: int(tty.Fd()), pgrp: unix.Getpgrp()}

	prev, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	if err != nil {
		return false, os.NewSyscallError("ioctl(TIOCGPGRP)", err)
	}
	if prev != t.pgrp {
		if err := t.setForeground(t.pgrp); err != nil {
			return false, fmt.Errorf("taking the terminal's foreground: %w", os.NewSyscallError("ioctl(TIOCSPGRP)", err))
		}
		// Back to whoever had it, even if they have since gone (then the
		// call fails and the terminal stays with cordon, the session's
		// job that is still running).
		defer func() { _ = t.setForeground(prev) }()
	}

	saved, err := unix.IoctlGetTermios(t.fd, unix.TCGETS)
	if err != nil {
		return false, os.NewSyscallError("ioctl(TCGETS)", err)
	}
	// The command may have left the terminal raw (an editor, a TUI): read
	// the answer as a line, echoed, with newlines translated both ways.
	line := *saved
	line.Lflag |= unix.ICANON | unix.ECHO | unix.ECHOE | unix.ECHOK
	line.Iflag |= unix.ICRNL
	line.Iflag &^= unix.INLCR | unix.IGNCR
	line.Oflag |= unix.OPOST | unix.ONLCR
	if err := unix.IoctlSetTermios(t.fd, unix.TCSETS, &line); err != nil {
		return false, os.NewSyscallError("ioctl(TCSETS)", err)
	}
	defer func() { _ = unix.IoctlSetTermios(t.fd, unix.TCSETS, saved) }()
	// Keys typed before the question was shown are not its answer.
	_ = unix.IoctlSetInt(t.fd, unix.TCFLSH, unix.TCIFLUSH)

	if _, err := fmt.Fprintf(tty, "cordon: allow? %s [y/N] ", question); err != nil {
		return false, fmt.Errorf("writing to the terminal: %w", err)
	}
	answer, err := readLine(t.fd, timeout)
	if errors.Is(err, errNoAnswer) {
		fmt.Fprintf(tty, "\ncordon: no answer within %v: denied\n", timeout)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// readLine reads one line from the terminal at fd (in canonical mode) or
// returns errNoAnswer once timeout has passed.
func readLine(fd int, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	var got []byte
	buf := make([]byte, 256)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return "", errNoAnswer
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Ppoll(fds, &ts, nil)
		if errors.Is(err, unix.EINTR) || n == 0 {
			continue
		}
		if err != nil {
			return "", os.NewSyscallError("ppoll", err)
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && fds[0].Revents&unix.POLLIN == 0 {
			return "", errors.New("the terminal hung up")
		}
		m, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case err != nil:
			return "", os.NewSyscallError("read", err)
		case m == 0:
			return string(got), nil // end of input (Ctrl-D): no
		}
		got = append(got, buf[:m]...)
		if i := strings.IndexByte(string(got), '\n'); i >= 0 || len(got) > 4096 {
			return string(got), nil
		}
	}
}
