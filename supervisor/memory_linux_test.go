package supervisor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// arena is memory in another process (an arena child) that a test fills
// with process_vm_writev and the memReader reads back, as the supervisor
// reads a sandboxed caller.
type arena struct {
	c    *child
	spec arenaSpec
	base uint64
	argv uint64 // the child's own argv array, with SelfArgv
	next int    // bump allocator: offset of the next free byte
}

func newArena(t *testing.T, spec arenaSpec) *arena {
	t.Helper()
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	c := startChild(t, "arena", []string{"two words", "", "\xff\xfe invalid"}, []string{arenaEnv + "=" + string(b)})
	var rep arenaReport
	c.NextJSON(10*time.Second, &rep)
	require.Empty(t, rep.Error, "arena child")
	require.NotZero(t, rep.Base)
	return &arena{c: c, spec: spec, base: rep.Base, argv: rep.Argv}
}

func (a *arena) pid() int { return a.c.Pid() }

func (a *arena) addr(off int) uint64 { return a.base + uint64(off) }

// write stores b at off in the child.
func (a *arena) write(t *testing.T, off int, b []byte) {
	t.Helper()
	if len(b) == 0 {
		return
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(a.addr(off)), Len: len(b)}}
	n, err := unix.ProcessVMWritev(a.pid(), local, remote, 0)
	require.NoError(t, err, "process_vm_writev of %d bytes at offset %d", len(b), off)
	require.Equal(t, len(b), n, "short process_vm_writev at offset %d", off)
}

// alloc reserves n bytes after the previous reservation and returns their
// offset; it fails the test if they would overlap a hole.
func (a *arena) alloc(t *testing.T, n int) int {
	t.Helper()
	off := a.next
	a.next += n
	require.LessOrEqual(t, a.next, a.spec.Pages*pageSize, "arena full")
	for _, h := range a.spec.Holes {
		require.False(t, off < (h+1)*pageSize && a.next > h*pageSize, "allocation [%d,%d) overlaps hole page %d: start the bump allocator past the holes", off, a.next, h)
	}
	return off
}

// putString stores s and a NUL and returns its address.
func (a *arena) putString(t *testing.T, s string) uint64 {
	off := a.alloc(t, len(s)+1)
	a.write(t, off, append([]byte(s), 0))
	return a.addr(off)
}

// putPtrs stores ptrs and a NULL as ptrSize-byte pointers and returns the
// array's address.
func (a *arena) putPtrs(t *testing.T, ptrs []uint64, ptrSize int) uint64 {
	b := encodePtrs(ptrs, ptrSize, true)
	off := a.alloc(t, len(b))
	a.write(t, off, b)
	return a.addr(off)
}

// putArgv stores the strings and their pointer array.
func (a *arena) putArgv(t *testing.T, argv []string, ptrSize int) uint64 {
	ptrs := make([]uint64, len(argv))
	for i, s := range argv {
		ptrs[i] = a.putString(t, s)
	}
	return a.putPtrs(t, ptrs, ptrSize)
}

func encodePtrs(ptrs []uint64, ptrSize int, terminate bool) []byte {
	b := make([]byte, 0, (len(ptrs)+1)*ptrSize)
	for _, p := range ptrs {
		b = appendPtr(b, p, ptrSize)
	}
	if terminate {
		b = appendPtr(b, 0, ptrSize)
	}
	return b
}

// readerHoles is the layout the page-boundary cases rely on: odd pages
// below 12 are holes, so each of pages 0, 2, ... 10 ends right before one
// (at 1*pageSize, 3*pageSize, ...). The bump allocator starts at page 12.
var readerHoles = []int{1, 3, 5, 7, 9, 11}

const readerFree = 12 * pageSize

func TestReadString(t *testing.T) {
	for _, low := range []bool{true, false} {
		kind := map[bool]string{true: "unmapped holes", false: "PROT_NONE holes"}[low]
		t.Run(kind, func(t *testing.T) {
			a := newArena(t, arenaSpec{Pages: 16, Holes: readerHoles, Low: low})
			tests := []struct {
				name    string
				off     int
				data    string
				limit   int
				want    string
				wantErr error
			}{
				{name: "empty", off: readerFree, data: "\x00", limit: pathMax, want: ""},
				{name: "short", off: readerFree + 8, data: "/usr/bin/git\x00", limit: pathMax, want: "/usr/bin/git"},
				{name: "invalid UTF-8 kept byte for byte", off: readerFree + 64, data: "\xff\xfe\xc3(\x80 \x01ok\x00", limit: pathMax, want: "\xff\xfe\xc3(\x80 \x01ok"},
				{name: "crosses into the next mapped page", off: 13*pageSize - 5, data: "0123456789\x00", limit: pathMax, want: "0123456789"},
				{name: "NUL is the last byte before a hole", off: 1*pageSize - 6, data: "hello\x00", limit: pathMax, want: "hello"},
				{name: "empty string as the last byte before a hole", off: 3*pageSize - 1, data: "\x00", limit: pathMax, want: ""},
				{name: "runs into a hole without NUL", off: 5*pageSize - 5, data: "abcde", limit: pathMax, wantErr: errFault},
				{name: "starts in a hole", off: 7*pageSize + 100, limit: pathMax, wantErr: errFault},
				{name: "limit minus one bytes fit", off: 12 * pageSize, data: strings.Repeat("p", pathMax-1) + "\x00", limit: pathMax, want: strings.Repeat("p", pathMax-1)},
				{name: "limit bytes are too long", off: 13*pageSize + 7, data: strings.Repeat("q", pathMax) + "\x00", limit: pathMax, wantErr: errNameLen},
				{name: "too long even when the rest is a hole", off: 7*pageSize - 20, data: strings.Repeat("r", 20), limit: 20, wantErr: errNameLen},
			}
			var m memReader // shared: the reader reuses its buffers across calls
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					a.write(t, tc.off, []byte(tc.data))
					got, err := m.readString(a.pid(), a.addr(tc.off), tc.limit, errNameLen)
					if tc.wantErr != nil {
						assert.ErrorIs(t, err, tc.wantErr)
						return
					}
					require.NoError(t, err)
					assert.Equal(t, tc.want, got)
				})
			}
		})
	}
}

func TestReadStringGoneProcess(t *testing.T) {
	a := newArena(t, arenaSpec{Pages: 1})
	addr := a.putString(t, "x")
	a.c.Kill()
	var m memReader
	_, err := m.readString(a.pid(), addr, pathMax, errNameLen)
	assert.ErrorIs(t, err, unix.ESRCH, "a dead caller must read as ESRCH, which the supervisor answers without logging")
}

func TestReadArgv(t *testing.T) {
	a := newArena(t, arenaSpec{Pages: 2048, Holes: readerHoles, Low: true})
	a.next = readerFree

	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("arg-%d", i)
		if i%97 == 0 {
			// Some longer than the first chunk readStrings reads per
			// string, so they take the one-by-one path mid-batch.
			many[i] = strings.Repeat(fmt.Sprintf("long-%d-", i), 40)
		}
	}
	ptrArgv := func(argv []string, ptrSize int) func(*testing.T) uint64 {
		return func(t *testing.T) uint64 { return a.putArgv(t, argv, ptrSize) }
	}
	// The kernel-limit cases point many entries at one string; they are
	// built when the case runs, so each test's memory is its own.
	sameString := func(n, strlen int, extra ...string) func(*testing.T) uint64 {
		return func(t *testing.T) uint64 {
			p := a.putString(t, strings.Repeat("z", strlen))
			ptrs := make([]uint64, n)
			for i := range ptrs {
				ptrs[i] = p
			}
			for _, e := range extra {
				ptrs = append(ptrs, a.putString(t, e))
			}
			return a.putPtrs(t, ptrs, 8)
		}
	}
	// maxArgBytes is counted as 8 bytes per pointer plus each string and
	// its NUL: 48 pointers to a string of 131063 bytes fill it exactly.
	const atLimitLen = maxArgBytes/48 - 8 - 1

	tests := []struct {
		name    string
		build   func(t *testing.T) uint64
		ptrSize int
		want    []string
		wantLen int // when want is too big to spell out
		wantErr error
	}{
		{
			name:    "NULL argv pointer is an empty argv",
			build:   func(*testing.T) uint64 { return 0 },
			ptrSize: 8,
			want:    nil,
		},
		{
			name:    "array holding only NULL",
			build:   ptrArgv(nil, 8),
			ptrSize: 8,
			want:    []string{},
		},
		{
			name:    "one argument",
			build:   ptrArgv([]string{"/bin/true"}, 8),
			ptrSize: 8,
			want:    []string{"/bin/true"},
		},
		{
			name:    "empty words and invalid UTF-8 kept byte for byte",
			build:   ptrArgv([]string{"git", "", "\xff\xfe", "a\x80b", "two words", "new\nline"}, 8),
			ptrSize: 8,
			want:    []string{"git", "", "\xff\xfe", "a\x80b", "two words", "new\nline"},
		},
		{
			name:    "10,000 arguments",
			build:   ptrArgv(many, 8),
			ptrSize: 8,
			want:    many,
		},
		{
			name:    "100 KiB argument",
			build:   ptrArgv([]string{"echo", strings.Repeat("0123456789abcdef", 100<<10/16)}, 8),
			ptrSize: 8,
			want:    []string{"echo", strings.Repeat("0123456789abcdef", 100<<10/16)},
		},
		{
			name:    "argument of MAX_ARG_STRLEN-1 bytes",
			build:   ptrArgv([]string{"echo", strings.Repeat("m", maxArgStrlen-1)}, 8),
			ptrSize: 8,
			want:    []string{"echo", strings.Repeat("m", maxArgStrlen-1)},
		},
		{
			name:    "argument of MAX_ARG_STRLEN bytes is E2BIG",
			build:   ptrArgv([]string{"echo", strings.Repeat("m", maxArgStrlen)}, 8),
			ptrSize: 8,
			wantErr: errTooBig,
		},
		{
			name:    "4-byte pointers",
			build:   ptrArgv([]string{"/usr/bin/git", "push", "", "\xff"}, 4),
			ptrSize: 4,
			want:    []string{"/usr/bin/git", "push", "", "\xff"},
		},
		{
			name:    "4-byte pointers, 3,000 arguments over several pages",
			build:   ptrArgv(many[:3000], 4),
			ptrSize: 4,
			want:    many[:3000],
		},
		{
			name: "pointer array ending right before a hole",
			build: func(t *testing.T) uint64 {
				ptrs := []uint64{a.putString(t, "ls"), a.putString(t, "-l")}
				b := encodePtrs(ptrs, 8, true)
				off := 1*pageSize - len(b)
				a.write(t, off, b)
				return a.addr(off)
			},
			ptrSize: 8,
			want:    []string{"ls", "-l"},
		},
		{
			name: "4-byte pointer array ending right before a hole",
			build: func(t *testing.T) uint64 {
				ptrs := []uint64{a.putString(t, "ls"), a.putString(t, "-l"), a.putString(t, "/")}
				b := encodePtrs(ptrs, 4, true)
				off := 3*pageSize - len(b)
				a.write(t, off, b)
				return a.addr(off)
			},
			ptrSize: 4,
			want:    []string{"ls", "-l", "/"},
		},
		{
			name: "pointer array running into a hole",
			build: func(t *testing.T) uint64 {
				p := a.putString(t, "x")
				b := encodePtrs([]uint64{p, p, p}, 8, false)
				off := 5*pageSize - len(b)
				a.write(t, off, b)
				return a.addr(off)
			},
			ptrSize: 8,
			wantErr: errFault,
		},
		{
			name: "argument ending right before a hole",
			build: func(t *testing.T) uint64 {
				off := 7*pageSize - 4
				a.write(t, off, []byte("abc\x00"))
				return a.putPtrs(t, []uint64{a.putString(t, "cat"), a.addr(off), a.putString(t, "tail")}, 8)
			},
			ptrSize: 8,
			want:    []string{"cat", "abc", "tail"},
		},
		{
			// readStrings reads the words of one page in one remote iovec
			// spanning them: out of order, repeated, interleaved with
			// another page, and one longer than its first chunk.
			name: "words sharing pages, out of order",
			build: func(t *testing.T) uint64 {
				off := a.alloc(t, 3*pageSize)
				p := (off + pageSize - 1) / pageSize * pageSize
				at := func(o int, s string) uint64 {
					a.write(t, p+o, append([]byte(s), 0))
					return a.addr(p + o)
				}
				b, first, c := at(200, "b"), at(100, "a"), at(pageSize+1000, "c")
				d, long := at(300, "d"), at(pageSize-40, strings.Repeat("L", 300))
				return a.putPtrs(t, []uint64{b, first, c, d, first, long, c}, 8)
			},
			ptrSize: 8,
			want:    []string{"b", "a", "c", "d", "a", strings.Repeat("L", 300), "c"},
		},
		{
			name: "words sharing the page before a hole",
			build: func(t *testing.T) uint64 {
				a.write(t, 4*pageSize+10, []byte("x\x00"))
				a.write(t, 5*pageSize-4, []byte("abc\x00"))
				return a.putPtrs(t, []uint64{a.addr(4*pageSize + 10), a.addr(5*pageSize - 4)}, 8)
			},
			ptrSize: 8,
			want:    []string{"x", "abc"},
		},
		{
			name: "a word running into a hole after one on its page",
			build: func(t *testing.T) uint64 {
				a.write(t, 8*pageSize+10, []byte("ok\x00"))
				a.write(t, 9*pageSize-3, []byte("abc"))
				return a.putPtrs(t, []uint64{a.addr(8*pageSize + 10), a.addr(9*pageSize - 3)}, 8)
			},
			ptrSize: 8,
			wantErr: errFault,
		},
		{
			name: "argument running into a hole",
			build: func(t *testing.T) uint64 {
				off := 9*pageSize - 3
				a.write(t, off, []byte("abc"))
				return a.putPtrs(t, []uint64{a.putString(t, "cat"), a.addr(off)}, 8)
			},
			ptrSize: 8,
			wantErr: errFault,
		},
		{
			name: "pointer into a hole in the middle of a batch",
			build: func(t *testing.T) uint64 {
				ptrs := make([]uint64, 2000)
				for i := range ptrs {
					ptrs[i] = a.putString(t, fmt.Sprint(i))
				}
				ptrs[1500] = a.addr(11*pageSize + 8)
				return a.putPtrs(t, ptrs, 8)
			},
			ptrSize: 8,
			wantErr: errFault,
		},
		{
			name:    "strings filling maxArgBytes exactly",
			build:   sameString(48, atLimitLen),
			ptrSize: 8,
			wantLen: 48,
		},
		{
			name:    "strings one byte over maxArgBytes are E2BIG",
			build:   sameString(47, atLimitLen, strings.Repeat("z", atLimitLen+1)),
			ptrSize: 8,
			wantErr: errTooBig,
		},
		{
			// Strings short enough to be read whole in the first batch
			// read count towards the limit too.
			name:    "31,000 pointers to one 200-byte string are E2BIG",
			build:   sameString(31000, 200),
			ptrSize: 8,
			wantErr: errTooBig,
		},
		{
			name:    "30,000 pointers to one 200-byte string fit",
			build:   sameString(30000, 200),
			ptrSize: 8,
			wantLen: 30000,
		},
		{
			name:    "64 pointers to one 100 KiB string are E2BIG",
			build:   sameString(64, 100<<10),
			ptrSize: 8,
			wantErr: errTooBig,
		},
	}
	var m memReader // shared across cases: the reader reuses its buffers
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.build(t)
			got, err := m.readArgv(a.pid(), addr, tc.ptrSize)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.wantLen > 0 {
				assert.Len(t, got, tc.wantLen)
				return
			}
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.Len(t, got, len(tc.want))
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Fatalf("argv[%d] = %q (%d bytes), want %q (%d bytes)", i, trunc(got[i]), len(got[i]), trunc(tc.want[i]), len(tc.want[i]))
				}
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// TestReadArgvPointerCountLimit covers the limit readPointers enforces
// before any string is read: every pointer costs its size plus at least one
// byte of string.
func TestReadArgvPointerCountLimit(t *testing.T) {
	// readPointers refuses once (n+1)*(8+1) > maxArgBytes, which first holds
	// at n = 699050 pointers.
	const overLimit = maxArgBytes / 9
	const fits = overLimit - 1
	pages := (overLimit+1)*8/pageSize + 2
	a := newArena(t, arenaSpec{Pages: pages})
	empty := a.putString(t, "")
	ptrs := make([]uint64, overLimit)
	for i := range ptrs {
		ptrs[i] = empty
	}
	array := a.putPtrs(t, ptrs, 8)
	var m memReader

	_, err := m.readArgv(a.pid(), array, 8)
	assert.ErrorIs(t, err, errTooBig, "%d pointers", overLimit)

	// One fewer: terminate the same array one entry earlier.
	a.write(t, int(array-a.base)+fits*8, make([]byte, 8))
	got, err := m.readArgv(a.pid(), array, 8)
	require.NoError(t, err, "%d pointers to empty strings", fits)
	assert.Len(t, got, fits)
}

// TestReadArgvOfChild reads an argv the child laid out itself from its own
// os.Args, including an empty word and invalid UTF-8.
func TestReadArgvOfChild(t *testing.T) {
	a := newArena(t, arenaSpec{Pages: 8, SelfArgv: true})
	require.NotZero(t, a.argv)
	var m memReader
	got, err := m.readArgv(a.pid(), a.argv, 8)
	require.NoError(t, err)
	assert.Equal(t, a.c.Cmd.Args, got)
}

// TestReadExec holds readExec, which reads the path in the batch of argv's
// strings, to the answers of reading them apart (readString, then
// readArgv), errors and their order included: a path that faults or is
// too long wins over a bad argv, as in the kernel. The paths cover one in
// the batch's chunk, one longer than it, one that ends right before a hole,
// one in a hole; the argvs a NULL array, an empty one, a faulting pointer,
// and more words than one process_vm_readv takes (IOV_MAX).
func TestReadExec(t *testing.T) {
	a := newArena(t, arenaSpec{Pages: 64, Holes: readerHoles})
	a.next = readerFree
	// A path that ends right before the hole at page 1.
	edge := strings.Repeat("e", 40)
	a.write(t, pageSize-len(edge)-1, append([]byte(edge), 0))
	paths := map[string]uint64{
		"short":             a.putString(t, "/usr/bin/true"),
		"longer than chunk": a.putString(t, "/"+strings.Repeat("d", 600)),
		"too long":          a.putString(t, strings.Repeat("x", pathMax)),
		"before a hole":     a.addr(pageSize - len(edge) - 1),
		"in a hole":         a.addr(3 * pageSize),
	}
	many := make([]string, iovMax+76)
	for i := range many {
		many[i] = fmt.Sprintf("w%d", i)
	}
	argvs := map[string]uint64{
		"NULL":            0,
		"empty":           a.putPtrs(t, nil, 8),
		"three words":     a.putArgv(t, []string{"true", "-x", ""}, 8),
		"faulting string": a.putPtrs(t, []uint64{a.addr(5 * pageSize)}, 8),
		"array in a hole": a.addr(7 * pageSize),
		"1100 words":      a.putArgv(t, many, 8),
	}
	var m, oracle memReader
	for pn, path := range paths {
		for an, argv := range argvs {
			t.Run(pn+"/"+an, func(t *testing.T) {
				wantPath, wantErr := oracle.readString(a.pid(), path, pathMax, errNameLen)
				var wantArgv []string
				if wantErr == nil {
					wantArgv, wantErr = oracle.readArgv(a.pid(), argv, 8)
				}
				gotPath, gotArgv, err := m.readExec(a.pid(), path, argv, 8)
				if wantErr != nil {
					assert.ErrorIs(t, err, wantErr)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, wantPath, gotPath)
				assert.Equal(t, wantArgv, gotArgv)
				// Compared as lists: the readers are reused across
				// cases (map order), so one may hold an emptied slice
				// where the other has none.
				assert.True(t, slices.Equal(oracle.ptrs, m.ptrs), "the pointers strict mode checks: %v, want %v", m.ptrs, oracle.ptrs)
			})
		}
	}
}

// TestReadImageArgv holds the exec event's reading of a new image's argv
// from its initial stack (argc, the pointers, a NULL; the strings end to
// end, as the kernel's loader lays them out) to what /proc/PID/cmdline
// would say, in both word widths, and refuses every other shape: a count
// that is not argc, strings that are not end to end, a stack of 4-byte
// words read as 8-byte ones (an x32 image, which imageArgv then reads
// again with 4), and a fault.
func TestReadImageArgv(t *testing.T) {
	a := newArena(t, arenaSpec{Pages: 64, Holes: readerHoles, Low: true})
	a.next = readerFree
	// stack lays out argc, pointers to the strings (end to end unless
	// gap), a NULL, and returns where argc is; count overrides argc.
	stack := func(t *testing.T, argv []string, ptrSize int, count int, gap bool) uint64 {
		ptrs := make([]uint64, len(argv))
		for i, s := range argv {
			if gap && i == 1 {
				a.alloc(t, 3)
			}
			ptrs[i] = a.putString(t, s)
		}
		b := appendPtr(nil, uint64(count), ptrSize)
		b = append(b, encodePtrs(ptrs, ptrSize, true)...)
		b = append(b, encodePtrs([]uint64{0x1234}, ptrSize, true)...) // envp
		off := a.alloc(t, len(b))
		a.write(t, off, b)
		return a.addr(off)
	}
	for _, ptrSize := range []int{8, 4} {
		t.Run(fmt.Sprint(ptrSize), func(t *testing.T) {
			var m memReader
			for _, argv := range [][]string{
				{"/bin/true"},
				{"git", "push", "--force", "origin", "main"},
				{"sh", "", "-c", strings.Repeat("long ", 200)},
				{"a", ""},
			} {
				got, err := m.readImageArgv(a.pid(), stack(t, argv, ptrSize, len(argv), false), ptrSize)
				require.NoError(t, err, "%q", argv)
				assert.Equal(t, argv, got)
			}
			// The kernel's one empty string for an empty argv, and a
			// zero argc (before Linux 5.18): no argument, as cmdline.
			got, err := m.readImageArgv(a.pid(), stack(t, []string{""}, ptrSize, 1, false), ptrSize)
			require.NoError(t, err)
			assert.Equal(t, []string{}, got)
			got, err = m.readImageArgv(a.pid(), stack(t, nil, ptrSize, 0, false), ptrSize)
			require.NoError(t, err)
			assert.Equal(t, []string{}, got)

			_, err = m.readImageArgv(a.pid(), stack(t, []string{"git", "push"}, ptrSize, 1, false), ptrSize)
			assert.ErrorIs(t, err, errImageShape, "argc 1, two pointers")
			_, err = m.readImageArgv(a.pid(), stack(t, []string{"git", "push"}, ptrSize, 3, false), ptrSize)
			assert.ErrorIs(t, err, errImageShape, "argc 3, two pointers")
			_, err = m.readImageArgv(a.pid(), stack(t, []string{"git", "push"}, ptrSize, 2, true), ptrSize)
			assert.ErrorIs(t, err, errImageShape, "strings not end to end")
			_, err = m.readImageArgv(a.pid(), a.addr(pageSize), ptrSize) // a hole
			assert.ErrorIs(t, err, errFault)
		})
	}
	var m memReader
	_, err := m.readImageArgv(a.pid(), stack(t, []string{"git", "push"}, 4, 2, false), 8)
	assert.ErrorIs(t, err, errImageShape, "4-byte words read as 8")
}
