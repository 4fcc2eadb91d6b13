package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/client"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"golang.org/x/sys/unix"
)

// Discovery is daemon.json: how clients reach the daemon. It holds either
// Socket, or Port (with Addr) and Token.
type Discovery struct {
	Pid int `json:"pid"`
	// StartTime is the daemon's start time in clock ticks after boot
	// (/proc/PID/stat): a pid reused by another process has another.
	StartTime  uint64    `json:"start_time,omitempty"`
	InstanceID string    `json:"instance_id"`
	Version    string    `json:"version,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	Socket     string    `json:"socket,omitempty"`
	Addr       string    `json:"addr,omitempty"`
	Port       int       `json:"port,omitempty"`
	Token      string    `json:"token,omitempty"`
}

// Endpoint is where d says the daemon listens.
func (d Discovery) Endpoint() client.Endpoint {
	if d.Socket != "" {
		return client.Endpoint{Socket: d.Socket}
	}
	return client.Endpoint{Addr: d.Addr, Token: d.Token}
}

// WriteDiscovery writes d to path atomically (a temporary file in the same
// directory, then rename) with mode 0600: a reader sees the old file or the
// new one, never a part, and never a token readable by others.
func WriteDiscovery(path string, d Discovery) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ReadDiscovery reads daemon.json. A file that is a symlink, not owned by
// this user or readable by others is refused.
func ReadDiscovery(path string) (Discovery, error) {
	var d Discovery
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return d, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return d, err
	}
	if owner(fi) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return d, fmt.Errorf("%s: owned by uid %d with mode %04o: not trusted", path, owner(fi), fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("%s: %w", path, err)
	}
	if d.Addr == "" && d.Port != 0 {
		d.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Port))
	}
	return d, nil
}

// procStartTime reads a process's start time (field 22 of /proc/PID/stat).
func procStartTime(pid int) (uint64, error) {
	st, err := proc.ReadStat(pid)
	return st.StartTime, err
}

// killFunc is kill(2), replaceable in tests.
type killFunc func(pid int, sig syscall.Signal) error

// pidAlive decides from a pid (and its start time, when known) whether the
// process still exists. EPERM means it exists but is not ours to signal (in
// another user namespace, or checked from inside a sandbox): alive. A
// different start time means the pid was reused: not alive. Errors other
// than ESRCH count as alive: a wrong "alive" costs a message, a wrong
// "dead" a second daemon.
func pidAlive(pid int, startTime uint64, kill killFunc) (bool, string) {
	if pid <= 0 {
		return false, "no pid"
	}
	err := kill(pid, 0)
	switch {
	case err == unix.ESRCH:
		return false, fmt.Sprintf("pid %d does not exist", pid)
	case err == unix.EPERM:
		return true, fmt.Sprintf("pid %d exists (kill answered EPERM: not ours to signal, counted as alive)", pid)
	case err != nil:
		return true, fmt.Sprintf("pid %d: kill answered %v (counted as alive)", pid, err)
	}
	if startTime != 0 {
		if st, err := procStartTime(pid); err == nil && st != startTime {
			return false, fmt.Sprintf("pid %d belongs to another process now (start time %d, not %d)", pid, st, startTime)
		}
	}
	return true, fmt.Sprintf("pid %d exists", pid)
}
