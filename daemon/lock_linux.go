package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked: another process holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock is an exclusive flock on a file. The file is never removed: a
// process that unlinked it could leave two holders of two files.
type Lock struct{ f *os.File }

// TryLock takes the exclusive lock on path without waiting.
func TryLock(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	if err := flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("locking %s: %w", path, os.NewSyscallError("flock", err))
	}
	return &Lock{f: f}, nil
}

// WaitLock takes the exclusive lock on path, waiting until ctx ends.
func WaitLock(ctx context.Context, path string) (*Lock, error) {
	for {
		l, err := TryLock(path)
		if !errors.Is(err, ErrLocked) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Unlock releases the lock.
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// lockHeld reports whether some process holds an exclusive lock on path.
// A missing file is a free lock. An error means the lock cannot be checked
// (no flock support, no access).
func lockHeld(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); {
	case err == nil:
		_ = flock(int(f.Fd()), unix.LOCK_UN)
		return false, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, nil
	default:
		return false, os.NewSyscallError("flock", err)
	}
}

// flock retries EINTR.
func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}
