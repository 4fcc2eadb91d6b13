package proc

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is one line of a mountinfo file: the mount it is mounted on,
// where (as the reading process's root renders it, octal escapes undone),
// its file system's device, and whether the mount itself is writable (its
// per-mount options: not "ro").
type Mount struct {
	Parent   int
	Point    string
	Dev      uint64
	Writable bool
}

// Mounts reads a mountinfo file (/proc/PID/mountinfo) into its mounts by
// mount id (the id statx's STATX_MNT_ID gives).
func Mounts(path string) (map[int]Mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int]Mount{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			return nil, fmt.Errorf("%s: a line of %d fields", path, len(fields))
		}
		id, err1 := strconv.Atoi(fields[0])
		parent, err2 := strconv.Atoi(fields[1])
		maj, min, ok := strings.Cut(fields[2], ":")
		ma, err3 := strconv.ParseUint(maj, 10, 32)
		mi, err4 := strconv.ParseUint(min, 10, 32)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || !ok {
			return nil, fmt.Errorf("%s: no mount ids or device in %q", path, sc.Text())
		}
		out[id] = Mount{Parent: parent, Point: unescapeMountField(fields[4]),
			Dev: unix.Mkdev(uint32(ma), uint32(mi)), Writable: !slices.Contains(strings.Split(fields[5], ","), "ro")}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// StackAt counts the mounts stacked at point from mount id top down: top,
// the mount top is mounted on when that one is at point too, and so on. 0
// when top is not at point (or unknown).
func StackAt(mounts map[int]Mount, top int, point string) int {
	n := 0
	for id := top; n <= len(mounts); n++ {
		m, ok := mounts[id]
		if !ok || m.Point != point {
			return n
		}
		id = m.Parent
	}
	return n
}

// unescapeMountField undoes the kernel's octal escapes in a mountinfo path
// (\040 space, \011 tab, \012 newline, \134 backslash).
func unescapeMountField(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
