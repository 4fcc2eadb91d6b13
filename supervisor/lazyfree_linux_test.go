package supervisor

import (
	"bufio"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/internal/testchild"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// lazyArgs is the exec the lazyfree child lays out: argv[1] is "push" at
// the end of page 0 and "x" and its NUL at the start of page 1, the page
// the kernel may drop.
var lazyArgs = struct {
	path string
	argv []string
}{"/usr/bin/git", []string{"git", "pushx"}}

// lazyReport is what the lazyfree child says: where its exec arguments
// are, or what is on page 1 now.
type lazyReport struct {
	Path, Argv  uint64
	Page1       []byte
	Unsupported string // the kernel lacks what was asked for
	Error       string
}

// lazyfreeChild lays out lazyArgs in two pages of private anonymous memory
// (MAP_DROPPABLE with CORDON_LAZY=droppable, left dirty), marks page 1 MADV_FREE (and
// read-only with CORDON_LAZY=readonly), reports the addresses, then obeys
// "pageout" (MADV_PAGEOUT on page 1, which discards a clean lazily freed
// page at once) and "peek" (report page 1's first bytes) lines on stdin.
func lazyfreeChild() int {
	// One thread on one CPU for the whole life of the page: a page just
	// faulted or marked waits in the CPU's own batch before it reaches
	// the LRU lists, and MADV_PAGEOUT drains only the batch of the CPU it
	// runs on; from another CPU it finds nothing to reclaim (a clean-clone
	// make test saw page 1 survive the pageout so).
	runtime.LockOSThread()
	var one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &one); err != nil {
		testchild.Report(lazyReport{Error: "sched_getaffinity: " + err.Error()})
		return 1
	}
	for cpu := 0; cpu < 1024; cpu++ {
		if one.IsSet(cpu) {
			one.Zero()
			one.Set(cpu)
			break
		}
	}
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		testchild.Report(lazyReport{Error: "sched_setaffinity: " + err.Error()})
		return 1
	}
	mode := os.Getenv("CORDON_LAZY")
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if mode == "droppable" {
		flags = mapDroppable | unix.MAP_ANONYMOUS
	}
	mem, err := unix.Mmap(-1, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		if mode == "droppable" {
			testchild.Report(lazyReport{Unsupported: "mmap(MAP_DROPPABLE): " + err.Error()})
			return 0
		}
		testchild.Report(lazyReport{Error: "mmap: " + err.Error()})
		return 1
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	copy(mem[128:], lazyArgs.path+"\x00")
	copy(mem[256:], lazyArgs.argv[0]+"\x00")
	at := pageSize - 4
	copy(mem[at:], lazyArgs.argv[1]+"\x00")
	*(*uint64)(unsafe.Pointer(&mem[0])) = base + 256
	*(*uint64)(unsafe.Pointer(&mem[8])) = base + uint64(at)
	*(*uint64)(unsafe.Pointer(&mem[16])) = 0
	page1 := mem[pageSize:]
	if mode != "droppable" { // a droppable page is left dirty: the kernel drops it all the same
		if err := unix.Madvise(page1, unix.MADV_FREE); err != nil {
			testchild.Report(lazyReport{Error: "madvise(MADV_FREE): " + err.Error()})
			return 1
		}
	}
	if mode == "readonly" {
		if err := unix.Mprotect(page1, unix.PROT_READ); err != nil {
			testchild.Report(lazyReport{Error: "mprotect: " + err.Error()})
			return 1
		}
	}
	testchild.Report(lazyReport{Path: base + 128, Argv: base})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var cmd string
		if err := json.Unmarshal(sc.Bytes(), &cmd); err != nil {
			testchild.Report(lazyReport{Error: "bad command: " + err.Error()})
			return 1
		}
		switch cmd {
		case "pageout":
			if err := unix.Madvise(page1, unix.MADV_PAGEOUT); err != nil {
				testchild.Report(lazyReport{Error: "madvise(MADV_PAGEOUT): " + err.Error()})
				return 1
			}
			testchild.Report(lazyReport{})
		case "peek":
			testchild.Report(lazyReport{Page1: append([]byte(nil), page1[:8]...)})
		}
	}
	return 0
}

// startLazyfree starts a lazyfree child in mode and returns it with where
// its arguments are.
func startLazyfree(t *testing.T, mode string) (*child, lazyReport) {
	t.Helper()
	c := startChild(t, "lazyfree", nil, []string{"CORDON_LAZY=" + mode})
	var rep lazyReport
	c.NextJSON(10*time.Second, &rep)
	require.Empty(t, rep.Error, "lazyfree child")
	if rep.Unsupported != "" {
		testcap.SkipOrFail(t, "the kernel lacks MAP_DROPPABLE (Linux 6.11+): %s", rep.Unsupported)
	}
	return c, rep
}

// page1 tells the child to run cmd ("pageout" or "peek") and returns what
// it said.
func page1(t *testing.T, c *child, cmd string) []byte {
	t.Helper()
	c.Send(cmd)
	var rep lazyReport
	c.NextJSON(10*time.Second, &rep)
	require.Empty(t, rep.Error, "lazyfree child")
	return rep.Page1
}

// strictStep reads the child's exec arguments as the supervisor does,
// locates them (both ways: PROCMAP_QUERY and parsing maps) and settles
// them: strict mode's memory check past the thread and sharer checks,
// which a Go child (many threads) would fail.
func strictStep(t *testing.T, c *child, rep lazyReport, useMaps bool) string {
	t.Helper()
	var m memReader
	path, argv, err := m.readExec(c.Pid(), rep.Path, rep.Argv, 8)
	require.NoError(t, err)
	require.Equal(t, lazyArgs.path, path)
	d := &Verdict{pathAddr: rep.Path, argvAddr: rep.Argv, ptrSize: 8}
	d.Exec.Path, d.Exec.Argv = path, argv
	ranges := argRanges(d, m.ptrs, 8)
	sv := newSandboxView(0)
	var (
		a      uint64
		why    string
		pieces []piece
		ok     = false
	)
	if !useMaps {
		a, why, pieces, ok = unsafeRangeQuery(c.Pid(), ranges, sv)
		if !ok {
			testcap.SkipOrFail(t, "PROCMAP_QUERY is not available (Linux 6.11+)")
		}
	} else {
		a, why, pieces = unsafeRange("/proc/"+strconv.Itoa(c.Pid())+"/maps", ranges, sv)
	}
	require.Empty(t, why, "locating the arguments (at %#x)", a)
	_, why = settle(c.Pid(), pieces, true)
	return why
}

// TestLazyfreeControl shows what the write-back prevents: a clean lazily
// freed page reads back as zeros once MADV_PAGEOUT (or memory pressure)
// reclaims it, so "pushx" would become "push" after the check.
func TestLazyfreeControl(t *testing.T) {
	c, _ := startLazyfree(t, "free")
	require.Equal(t, []byte("x\x00"), page1(t, c, "peek")[:2], "before reclaim")
	page1(t, c, "pageout")
	if got := page1(t, c, "peek"); string(got[:2]) != "\x00\x00" {
		testcap.SkipOrFail(t, "MADV_PAGEOUT did not discard a clean MADV_FREE page (page 1 reads %q): the premise of the lazyfree tests does not hold here", got)
	}
}

// TestStrictWritesBackLazyfree: after strict mode's check, a lazily freed
// page holding part of argv[1] keeps the checked bytes through reclaim,
// whether the page is reclaimed after the write-back or between the read
// and the write-back.
func TestStrictWritesBackLazyfree(t *testing.T) {
	for _, useMaps := range []bool{false, true} {
		name := "procmap_query"
		if useMaps {
			name = "maps"
		}
		t.Run(name+"/reclaimed after", func(t *testing.T) {
			c, rep := startLazyfree(t, "free")
			require.Empty(t, strictStep(t, c, rep, useMaps))
			page1(t, c, "pageout")
			require.Equal(t, "x\x00", string(page1(t, c, "peek")[:2]), "page 1 after reclaim: the checked bytes, not zeros")
		})
		t.Run(name+"/reclaimed between read and write-back", func(t *testing.T) {
			c, rep := startLazyfree(t, "free")
			var m memReader
			path, argv, err := m.readExec(c.Pid(), rep.Path, rep.Argv, 8)
			require.NoError(t, err)
			d := &Verdict{pathAddr: rep.Path, argvAddr: rep.Argv, ptrSize: 8}
			d.Exec.Path, d.Exec.Argv = path, argv
			require.Equal(t, lazyArgs.argv, argv)
			ranges := argRanges(d, m.ptrs, 8)
			page1(t, c, "pageout") // the kernel drops the page after the read
			var pieces []piece
			var why string
			if useMaps {
				_, why, pieces = unsafeRange("/proc/"+strconv.Itoa(c.Pid())+"/maps", ranges, newSandboxView(0))
			} else {
				var ok bool
				_, why, pieces, ok = unsafeRangeQuery(c.Pid(), ranges, newSandboxView(0))
				if !ok {
					testcap.SkipOrFail(t, "PROCMAP_QUERY is not available (Linux 6.11+)")
				}
			}
			require.Empty(t, why)
			_, why = settle(c.Pid(), pieces, true)
			require.Empty(t, why)
			require.Equal(t, "x\x00", string(page1(t, c, "peek")[:2]), "page 1 after the write-back: the checked bytes again")
			_, argv, err = m.readExec(c.Pid(), rep.Path, rep.Argv, 8)
			require.NoError(t, err)
			require.Equal(t, lazyArgs.argv, argv, "what the kernel will read on CONTINUE")
		})
	}
}

// TestStrictRefusesDroppable: arguments in a MAP_DROPPABLE mapping, whose
// pages the kernel may drop even when dirty, are refused.
func TestStrictRefusesDroppable(t *testing.T) {
	for _, useMaps := range []bool{false, true} {
		c, rep := startLazyfree(t, "droppable")
		why := strictStep(t, c, rep, useMaps)
		require.Contains(t, why, "MAP_DROPPABLE", "maps fallback: %v", useMaps)
	}
}

// TestStrictRefusesReadOnlyLazyfree: a lazily freed page made read-only
// cannot be written back, so it is refused.
func TestStrictRefusesReadOnlyLazyfree(t *testing.T) {
	c, rep := startLazyfree(t, "readonly")
	why := strictStep(t, c, rep, false)
	require.Contains(t, why, "read-only anonymous memory")
}
