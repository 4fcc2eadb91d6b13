package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// File names in the daemon's directory.
const (
	LockName      = "daemon.lock"
	StartLockName = "start.lock"
	DiscoveryName = "daemon.json"
	SocketName    = "daemon.sock"
	LogName       = "daemon.log"
)

// maxSocketPath is the longest path a Unix socket can be bound at:
// sockaddr_un.sun_path has 108 bytes, one of them the terminating NUL.
const maxSocketPath = 107

// Paths are the daemon's files.
type Paths struct {
	Dir                                     string
	Lock, StartLock, Discovery, Socket, Log string
	// Skipped says which candidate directories were passed over, and why.
	Skipped []string
}

func pathsIn(dir string) Paths {
	return Paths{
		Dir:       dir,
		Lock:      filepath.Join(dir, LockName),
		StartLock: filepath.Join(dir, StartLockName),
		Discovery: filepath.Join(dir, DiscoveryName),
		Socket:    filepath.Join(dir, SocketName),
		Log:       filepath.Join(dir, LogName),
	}
}

// SocketFits reports whether a Unix socket can be bound at path
// (sun_path's length).
func SocketFits(path string) bool { return len(path) <= maxSocketPath }

// ErrNoDir: no candidate directory is usable.
var ErrNoDir = errors.New("no usable directory for the cordon daemon")

// env is what location depends on, so tests can substitute it.
type env struct {
	getenv func(string) string
	uid    int
	// home is the user's home directory from the passwd database.
	home func() (string, error)
	// runUser is /run/user (a parameter for tests).
	runUser string
}

func osEnv() env {
	return env{
		getenv: os.Getenv,
		uid:    os.Geteuid(),
		home: func() (string, error) {
			u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
			if err == nil && u.HomeDir != "" {
				return u.HomeDir, nil
			}
			// No passwd entry (some containers): the environment is all
			// there is.
			if h := os.Getenv("HOME"); filepath.IsAbs(h) {
				return h, nil
			}
			return "", fmt.Errorf("no home directory for uid %d", os.Geteuid())
		},
		runUser: "/run/user",
	}
}

// candidate is a possible daemon directory. parent, when set, must
// already exist, be owned by the user and have mode 0700 (a runtime
// directory); otherwise the directory's ancestors are created.
type candidate struct {
	dir, parent, label string
}

func (e env) candidates() ([]candidate, []string) {
	var out []candidate
	var skipped []string
	if x := e.getenv("XDG_RUNTIME_DIR"); x != "" {
		if filepath.IsAbs(x) {
			out = append(out, candidate{dir: filepath.Join(x, "cordon"), parent: filepath.Clean(x), label: "$XDG_RUNTIME_DIR"})
		} else {
			skipped = append(skipped, fmt.Sprintf("$XDG_RUNTIME_DIR %q is not absolute", x))
		}
	}
	run := filepath.Join(e.runUser, strconv.Itoa(e.uid))
	if len(out) == 0 || out[0].parent != run {
		out = append(out, candidate{dir: filepath.Join(run, "cordon"), parent: run, label: run})
	}
	if h, err := e.home(); err == nil {
		out = append(out, candidate{dir: filepath.Join(h, ".cache", "cordon", "run"), label: "home"})
	} else {
		skipped = append(skipped, err.Error())
	}
	return out, skipped
}

// Locate finds, creates if needed and verifies the daemon's directory.
func Locate() (Paths, error) { return osEnv().locate() }

func (e env) locate() (Paths, error) {
	cands, skipped := e.candidates()
	for _, c := range cands {
		if err := e.prepare(c); err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		p := pathsIn(c.dir)
		p.Skipped = skipped
		return p, nil
	}
	return Paths{Skipped: skipped}, fmt.Errorf("%w: %s", ErrNoDir, strings.Join(skipped, "; "))
}

func (e env) prepare(c candidate) error {
	if c.parent != "" {
		if err := e.verify(c.parent, 0o700); err != nil {
			return err
		}
	} else if err := os.MkdirAll(filepath.Dir(c.dir), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(c.dir), err)
	}
	if err := os.Mkdir(c.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: %w", c.dir, err)
	}
	fi, err := os.Lstat(c.dir)
	if err == nil && fi.IsDir() && owner(fi) == e.uid && fi.Mode().Perm() != 0o700 {
		// Ours, with a looser mode (made by hand, or by an old umask):
		// tighten it rather than pass it over.
		_ = os.Chmod(c.dir, 0o700)
	}
	return e.verify(c.dir, 0o700)
}

// verify checks that dir is a directory (not a symlink) owned by the user
// with exactly mode perm.
func (e env) verify(dir string, perm fs.FileMode) error {
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case owner(fi) != e.uid:
		return fmt.Errorf("%s is owned by uid %d, not %d", dir, owner(fi), e.uid)
	case fi.Mode().Perm() != perm:
		return fmt.Errorf("%s has mode %04o, want %04o", dir, fi.Mode().Perm(), perm)
	}
	return nil
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// HidePaths lists what a sandbox must not see of any cordon daemon of this
// user: every candidate directory that exists (hidden with an empty tmpfs),
// and the socket daemon.json names when it lies outside them (covered with
// /dev/null). The directory a daemon would use is created first (as Locate
// does): a sandbox started before any daemon would otherwise see the
// directory's parent, and in it the socket of a daemon started later.
func HidePaths() (dirs, files []string) { return osEnv().hidePaths() }

func (e env) hidePaths() (dirs, files []string) {
	// An error means no directory is usable: no daemon can start there
	// either (it locates its directory the same way).
	_, _ = e.locate()
	cands, _ := e.candidates()
	for _, c := range cands {
		if fi, err := os.Lstat(c.dir); err == nil && fi.IsDir() {
			dirs = append(dirs, c.dir)
		}
	}
	for _, d := range dirs {
		disc, err := ReadDiscovery(filepath.Join(d, DiscoveryName))
		if err != nil || disc.Socket == "" {
			continue
		}
		inside := false
		for _, h := range dirs {
			if strings.HasPrefix(disc.Socket, h+"/") {
				inside = true
			}
		}
		if fi, err := os.Lstat(disc.Socket); !inside && err == nil && fi.Mode()&fs.ModeSocket != 0 {
			files = append(files, disc.Socket)
		}
	}
	return dirs, files
}
