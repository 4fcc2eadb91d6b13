package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// ReadFile reads a /proc file whole with plain system calls: open, read
// until EOF, close. Unlike os.ReadFile it never registers the descriptor
// with Go's netpoller (an epoll_ctl that fails for proc files, and fcntl
// calls around it) nor stats the file (proc files report size 0). The
// supervisor reads several of these per exec, on its hot path. buf, when
// it has room, is reused for the content.
func ReadFile(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if cap(buf) < 512 {
		buf = make([]byte, 0, 512)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
