package supervisor

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"golang.org/x/sys/unix"
)

// TestProcmapQueryMatchesMaps checks that the PROCMAP_QUERY path of strict
// mode's memory check says what parsing /proc/PID/maps says, for memory it
// must accept (private anonymous) and memory it must refuse (a shared
// mapping, a private mapping of a file on a writable device, a hole), and
// for ranges that run from one mapping into the next.
func TestProcmapQueryMatchesMaps(t *testing.T) {
	const pg = pageSize
	// Six pages reserved in one place, then reshaped: 0-1 private
	// anonymous, 2 shared anonymous, 3 a hole, 4 a private mapping of a
	// file in a writable directory, 5 private anonymous.
	region, err := unix.Mmap(-1, 0, 6*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	base := uintptr(unsafe.Pointer(&region[0]))
	t.Cleanup(func() { _, _, _ = unix.Syscall(unix.SYS_MUNMAP, base, 6*pg, 0) })
	fixed := func(page int, prot, flags int, fd int) {
		t.Helper()
		_, _, e := unix.Syscall6(unix.SYS_MMAP, base+uintptr(page*pg), pg, uintptr(prot), uintptr(flags|unix.MAP_FIXED), uintptr(fd), 0)
		if e != 0 {
			t.Fatalf("mmap page %d: %v", page, e)
		}
	}
	fixed(2, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS, -1)
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, base+3*pg, pg, 0); e != 0 {
		t.Fatalf("munmap: %v", e)
	}
	file := filepath.Join(t.TempDir(), "mapped")
	if err := os.WriteFile(file, make([]byte, pg), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fixed(4, unix.PROT_READ, unix.MAP_PRIVATE, int(f.Fd()))
	fixed(5, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, -1)

	sv := newSandboxView(0)
	at := func(page int, off uint64) uint64 { return uint64(base) + uint64(page*pg) + off }
	cases := []struct {
		name   string
		ranges []span
		safe   bool
		first  uint64 // the address reported when not safe
	}{
		{"private anonymous", []span{{at(0, 10), at(0, 20), nil}}, true, 0},
		{"across two private anonymous pages", []span{{at(0, pg-8), at(1, 8), nil}}, true, 0},
		{"shared", []span{{at(2, 0), at(2, 1), nil}}, false, at(2, 0)},
		{"private anonymous running into shared", []span{{at(1, pg-4), at(2, 4), nil}}, false, at(2, 0)},
		{"hole", []span{{at(3, 100), at(3, 101), nil}}, false, at(3, 100)},
		{"running into the hole", []span{{at(2, pg-1), at(3, 1), nil}}, false, at(2, pg-1)},
		{"private file on a writable mount", []span{{at(4, 0), at(4, 8), nil}}, false, at(4, 0)},
		{"second range unsafe", []span{{at(5, 0), at(5, 8), nil}, {at(2, 8), at(2, 9), nil}}, false, at(2, 8)},
		{"empty list", nil, true, 0},
	}
	pid := os.Getpid()
	for _, c := range cases {
		qa, qwhy, _, ok := unsafeRangeQuery(pid, c.ranges, sv)
		if !ok {
			testcap.SkipOrFail(t, "PROCMAP_QUERY is not available (Linux 6.11+); the maps fallback is what runs here")
		}
		ma, mwhy, _ := unsafeRange("/proc/self/maps", c.ranges, sv)
		if qa != ma || qwhy != mwhy {
			t.Errorf("%s: PROCMAP_QUERY says %#x %q, maps says %#x %q", c.name, qa, qwhy, ma, mwhy)
		}
		if (qwhy == "") != c.safe {
			t.Errorf("%s: safe = %v (%q), want %v", c.name, qwhy == "", qwhy, c.safe)
		}
		if !c.safe && qa != c.first {
			t.Errorf("%s: first unsafe address %#x, want %#x", c.name, qa, c.first)
		}
	}
}
