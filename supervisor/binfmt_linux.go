package supervisor

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"golang.org/x/sys/unix"
)

// binfmtDir is where the kernel lists its binfmt_misc handlers.
const binfmtDir = "/proc/sys/fs/binfmt_misc"

// binfmtEntry is one enabled binfmt_misc handler: the kernel runs its
// interpreter for a file whose name ends in ext, or whose first bytes at
// offset match magic under mask.
type binfmtEntry struct {
	name, interp string
	ext          string
	offset       int
	magic, mask  []byte
}

// binfmtEntries reads the enabled handlers. None when binfmt_misc is
// disabled, or not mounted where the kernel lists them (then handlers
// registered through another mount are not seen: README, strict mode).
func binfmtEntries() ([]binfmtEntry, error) {
	var sfs unix.Statfs_t
	if unix.Statfs(binfmtDir, &sfs) != nil || sfs.Type != unix.BINFMTFS_MAGIC {
		return nil, nil
	}
	return readBinfmt(binfmtDir)
}

// readBinfmt reads the enabled handlers listed in dir, a binfmt_misc file
// system.
func readBinfmt(dir string) ([]binfmtEntry, error) {
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(status)) != "enabled" {
		return nil, nil
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []binfmtEntry
	for _, n := range names {
		if n.Name() == "status" || n.Name() == "register" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err != nil {
			return nil, err
		}
		e, enabled, err := parseBinfmt(n.Name(), b)
		if err != nil {
			return nil, err
		}
		if enabled {
			out = append(out, e)
		}
	}
	return out, nil
}

// parseBinfmt parses a handler's file as the kernel prints it
// (fs/binfmt_misc.c entry_status): "enabled", "interpreter PATH", "flags:
// ...", then "extension .EXT", or "offset N", "magic HEX" and "mask HEX".
func parseBinfmt(name string, b []byte) (e binfmtEntry, enabled bool, err error) {
	e.name = name
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch k {
		case "enabled":
			enabled = true
		case "interpreter":
			e.interp = v
		case "extension":
			e.ext = strings.TrimPrefix(v, ".")
		case "offset":
			if e.offset, err = strconv.Atoi(v); err != nil {
				return e, false, fmt.Errorf("binfmt_misc handler %s: offset %q", name, v)
			}
		case "magic":
			if e.magic, err = hex.DecodeString(v); err != nil {
				return e, false, fmt.Errorf("binfmt_misc handler %s: magic %q", name, v)
			}
		case "mask":
			if e.mask, err = hex.DecodeString(v); err != nil {
				return e, false, fmt.Errorf("binfmt_misc handler %s: mask %q", name, v)
			}
		}
	}
	if e.ext == "" && len(e.magic) == 0 {
		return e, false, fmt.Errorf("binfmt_misc handler %s: neither an extension nor a magic", name)
	}
	return e, enabled, nil
}

// matches reports whether the kernel would hand the file named name (the
// path as exec'd: the kernel takes the extension after the last '.' of
// the whole string) whose first bytes are head to e (fs/binfmt_misc.c
// check_file).
func (e binfmtEntry) matches(name string, head []byte) bool {
	if e.ext != "" {
		i := strings.LastIndexByte(name, '.')
		return i >= 0 && name[i+1:] == e.ext
	}
	// The kernel matches against its head buffer, zero-filled past the
	// end of a short file: a magic ending in zeros matches a file shorter
	// than it.
	if len(head) < binprmBufSize {
		head = append(append(make([]byte, 0, binprmBufSize), head...), make([]byte, binprmBufSize-len(head))...)
	}
	if e.offset < 0 || e.offset+len(e.magic) > len(head) {
		return false
	}
	s := head[e.offset : e.offset+len(e.magic)]
	if len(e.mask) == 0 {
		return bytes.Equal(s, e.magic)
	}
	for j := range e.magic {
		m := byte(0xff)
		if j < len(e.mask) {
			m = e.mask[j]
		}
		if (s[j]^e.magic[j])&m != 0 {
			return false
		}
	}
	return true
}

// binfmtHandled says why strict mode cannot let d run when the kernel
// would hand the program or one of its #! interpreters to a binfmt_misc
// handler: the handler's interpreter runs instead, which the check did
// not decide and no exec event shows (with ptrace, that exec event kills
// it as changed after check). "" when no enabled handler matches.
func binfmtHandled(root int, d *Verdict) string {
	entries, err := binfmtEntries()
	if err != nil {
		return "cannot read the kernel's binfmt_misc handlers: " + err.Error()
	}
	if len(entries) == 0 {
		return ""
	}
	files := []struct{ name, path string }{{d.Exec.Path, d.called}}
	for _, in := range d.Interpreter {
		files = append(files, struct{ name, path string }{in, in})
	}
	for _, f := range files {
		fd, err := proc.Openat2(root, strings.TrimPrefix(f.path, "/"), &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT})
		if err != nil {
			return "cannot read " + f.path + " to match it against the kernel's binfmt_misc handlers"
		}
		head, err := readHead(fd)
		unix.Close(fd)
		if err != nil {
			return "cannot read " + f.path + " to match it against the kernel's binfmt_misc handlers"
		}
		for _, e := range entries {
			if e.matches(f.name, head) {
				return fmt.Sprintf("the kernel hands %s to binfmt_misc handler %s (%s), whose run it cannot verify", f.path, e.name, e.interp)
			}
		}
	}
	return ""
}
