package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// The readiness handshake: whoever starts the daemon passes it the write
// end of a pipe; the daemon writes exactly one line and closes it:
//
//	ready PID        listening, daemon.json written
//	running PID      another daemon holds the lock (PID from its daemon.json, or 0)
//	error MESSAGE    start-up failed; MESSAGE is the error, on one line
//
// A pipe closed without a line means the daemon died during start-up.

// Notifier writes the one readiness line. Its methods do nothing on a nil
// Notifier (a daemon started by hand).
type Notifier struct{ f *os.File }

// NewNotifier wraps the readiness pipe's write end (nil for none).
func NewNotifier(f *os.File) *Notifier {
	if f == nil {
		return nil
	}
	return &Notifier{f: f}
}

func (n *Notifier) send(line string) {
	if n == nil || n.f == nil {
		return
	}
	_, _ = n.f.WriteString(line + "\n")
	_ = n.f.Close()
	n.f = nil
}

// Ready says the daemon is serving.
func (n *Notifier) Ready(pid int) { n.send("ready " + strconv.Itoa(pid)) }

// Running says another daemon holds the lock.
func (n *Notifier) Running(pid int) { n.send("running " + strconv.Itoa(pid)) }

// Failed sends the start-up error.
func (n *Notifier) Failed(err error) {
	n.send("error " + strings.ReplaceAll(err.Error(), "\n", " "))
}

// readiness is what the starter learned.
type readiness struct {
	kind string // ready, running, error
	pid  int
	msg  string
}

var errNoReadiness = errors.New("the daemon exited during start-up without saying why")

// awaitReadiness reads the readiness line, up to timeout.
func awaitReadiness(r *os.File, timeout time.Duration) (readiness, error) {
	_ = r.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(io.LimitReader(r, 64<<10)).ReadString('\n')
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return readiness{}, fmt.Errorf("the daemon did not report readiness within %v", timeout)
		}
		return readiness{}, errNoReadiness
	}
	kind, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	switch kind {
	case "ready", "running":
		pid, _ := strconv.Atoi(rest)
		return readiness{kind: kind, pid: pid}, nil
	case "error":
		return readiness{kind: kind, msg: rest}, nil
	}
	return readiness{}, fmt.Errorf("unexpected readiness line %q", line)
}
