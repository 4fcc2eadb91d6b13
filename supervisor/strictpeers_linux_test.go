package supervisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// startPids runs name with args, stdin held open until the test ends, and
// returns the pids it prints on its first line.
func startPids(t *testing.T, name string, args ...string) []int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { in.Close(); cancel(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	var s string
	select {
	case s = <-line:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s printed no pids", name)
	}
	var pids []int
	for _, f := range strings.Fields(s) {
		p, err := strconv.Atoi(f)
		require.NoError(t, err, "%s printed %q", name, s)
		pids = append(pids, p)
	}
	require.NotEmpty(t, pids, "%s printed %q", name, s)
	return pids
}

// peerOf runs memoryPeer for the host process pid, as the supervisor does
// for a caller (here the host is the sandbox: its proc, its pid namespace).
func peerOf(t *testing.T, pid int) string {
	t.Helper()
	ownTreeOnly(t)
	st, err := proc.ReadStatus(pid)
	require.NoError(t, err)
	return newSandboxView(0).memoryPeer(pid, st, 0)
}

// ownTreeOnly makes memoryPeer list, until the test ends, only this test
// binary and its descendants: the host stands in for the sandbox here, and
// a process elsewhere on it (a thread group whose main thread exited, which
// another package's tests start at the same time) is none of these tests'
// business. The binary becomes a child subreaper, so a process orphaned in
// a test (vforkpeer's D) stays in its tree.
func ownTreeOnly(t *testing.T) {
	t.Helper()
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	prev := listSandboxPids
	t.Cleanup(func() { listSandboxPids = prev })
	self := os.Getpid()
	listSandboxPids = func(dir, limit int) ([]int, error) {
		all, err := prev(dir, limit)
		if err != nil {
			return nil, err
		}
		mine := map[int]bool{self: true}
		for _, m := range proc.Descendants(self, func() bool { return true }, nil) {
			mine[m.Pid] = true
			unix.Close(m.FD)
		}
		var pids []int
		for _, p := range all {
			if mine[p] {
				pids = append(pids, p)
			}
		}
		return pids, nil
	}
}

// forkSiblings is a python3 program that forks two children which do not
// exec (as a shell's & subshells before their exec) and prints their pids.
const forkSiblings = `
import os, sys
kids = []
for _ in range(2):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)  # the parent closes w when its stdin closes
        os._exit(0)
    os.close(r)
    kids.append((pid, w))
print(*[p for p, _ in kids], flush=True)
sys.stdin.read()
`

// TestMemoryPeerForkSiblings: processes forked from one parent keep its
// memory layout until they exec, without sharing memory; a caller beside
// such a sibling is not refused. Before: "process N may share the caller's
// memory" (every exec beside a shell's & subshell, in strict mode).
func TestMemoryPeerForkSiblings(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testcap.SkipOrFail(t, "no python3: %v", err)
	}
	pids := startPids(t, python, "-c", forkSiblings)
	require.Len(t, pids, 2)
	a, b := pids[0], pids[1]
	sa, err := proc.ReadStat(a)
	require.NoError(t, err)
	sb, err := proc.ReadStat(b)
	require.NoError(t, err)
	require.Equal(t, sa.Layout, sb.Layout, "the premise: fork siblings have one layout")
	require.Empty(t, peerOf(t, a))
	require.Empty(t, peerOf(t, b))
}

// TestMemoryPeerVforkChain: a process sharing the caller's memory that is
// not its parent (P vforks C, C vforks D, D kills C: P runs on D's memory)
// is found and refused.
func TestMemoryPeerVforkChain(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testcap.SkipOrFail(t, "no gcc: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "vforkpeer")
	b, err := exec.Command(gcc, "-O2", "-Wall", "-o", bin, "testdata/vforkpeer.c").CombinedOutput()
	require.NoError(t, err, "gcc: %s", b)
	pids := startPids(t, bin)
	require.Len(t, pids, 2)
	d, p := pids[0], pids[1]
	st, err := proc.ReadStatus(d)
	require.NoError(t, err)
	require.NotEqual(t, p, st.PPid, "the premise: D's parent is not P")
	require.Contains(t, peerOf(t, d), fmt.Sprintf("process %d of the sandbox may share the caller's memory", p))
}

// TestDistinctMemoryIdentity: a candidate is compared only when its pid
// still names the process that was listed (same start time); a start time
// that does not match (the pid reused) or a pid that is gone is never
// proof of distinct memory.
func TestDistinctMemoryIdentity(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testcap.SkipOrFail(t, "no python3: %v", err)
	}
	pids := startPids(t, python, "-c", forkSiblings)
	a, b := pids[0], pids[1]
	sb, err := proc.ReadStat(b)
	require.NoError(t, err)
	h := &hostPids{same: true}
	distinct := func(h *hostPids, p int, start uint64) bool {
		d, _ := h.distinctMemory(a, p, start)
		return d
	}
	require.True(t, distinct(h, b, sb.StartTime), "the control: b, listed, is a copy")
	require.False(t, distinct(h, b, sb.StartTime+1), "another process under b's pid")
	require.False(t, distinct(h, 1<<22+7, sb.StartTime), "a pid that is gone")
	require.False(t, distinct(&hostPids{ns: map[int]int{}}, b, sb.StartTime), "a pid the walk did not find")
	require.False(t, distinct(&hostPids{ns: map[int]int{b: a}}, b, sb.StartTime), "a stale map naming another process")
}

// TestMemoryPeerListsAgainAfterAWrap: pid numbers wrapping during one
// listing (the host's counter wraps every pid_max processes, and this
// check reads it) makes memoryPeer list again, not refuse; wrapping in
// every pass still refuses. Before: one wrap refused the exec
// (TestStrictParallelSubshells saw "pid numbers wrapped around" in a
// clean-clone make test).
func TestMemoryPeerListsAgainAfterAWrap(t *testing.T) {
	t.Cleanup(func() { readLastPid = (*sandboxView).lastPid })
	wraps := 0
	readLastPid = func(v *sandboxView, dir int) (int, error) {
		n, err := v.lastPid(dir)
		if wraps > 0 {
			wraps--
			if wraps%2 == 0 {
				return 0, err // the second read of a pass: gone down
			}
		}
		return n, err
	}
	self := os.Getpid()
	wraps = 2 // one pass wraps
	assert.Empty(t, peerOf(t, self))
	wraps = 2 * maxPeerPasses // every pass wraps
	assert.Contains(t, peerOf(t, self), "pid numbers wrapped around")
}

// peerWith runs memoryPeer for the host process pid as peerOf does, with
// the sandbox's pid counter read by lastPid (Options.LastPid).
func peerWith(t *testing.T, pid int, lastPid func() (int, error)) string {
	t.Helper()
	ownTreeOnly(t)
	st, err := proc.ReadStatus(pid)
	require.NoError(t, err)
	v := newSandboxView(0)
	v.nsLastPid = lastPid
	return v.memoryPeer(pid, st, 0)
}

// TestMemoryPeerAsksTheSandboxsCounter: with Options.LastPid set (the
// sandbox has a pid namespace of its own, whose counter only a process in
// it can read), the listing's wrap check asks it, and nothing else: its
// counter going down lists again, going down in every pass refuses, and
// not answering refuses. Before: the supervisor read its own namespace's
// counter, which does not move when the sandbox's wraps.
func TestMemoryPeerAsksTheSandboxsCounter(t *testing.T) {
	self := os.Getpid()
	// counter answers 100 at a pass's first read, and at its second 200,
	// or 5 (wrapped) while wraps lasts; fail, when set, fails the read
	// numbered so (1: the first).
	var calls, wraps, fail int
	counter := func() (int, error) {
		calls++
		if calls == fail {
			return 0, errors.New("the init did not answer")
		}
		if calls%2 == 1 {
			return 100, nil
		}
		if wraps > 0 {
			wraps--
			return 5, nil
		}
		return 200, nil
	}
	assert.Empty(t, peerWith(t, self, counter))
	assert.Equal(t, 2, calls, "one pass reads the sandbox's counter before and after the listing")

	calls, wraps = 0, 1
	assert.Empty(t, peerWith(t, self, counter), "one wrap lists again")
	assert.Equal(t, 4, calls, "two passes")

	calls, wraps = 0, maxPeerPasses
	assert.Contains(t, peerWith(t, self, counter), "pid numbers wrapped around")
	assert.Equal(t, 2*maxPeerPasses, calls)

	calls, wraps, fail = 0, 0, 1
	why := peerWith(t, self, counter)
	assert.Contains(t, why, "cannot list the sandbox's processes")
	assert.Contains(t, why, "the init did not answer")

	calls, fail = 0, 2
	why = peerWith(t, self, counter)
	assert.Contains(t, why, "cannot tell whether pid numbers wrapped around")
	assert.Contains(t, why, "the init did not answer")
	assert.Equal(t, 2, calls, "an error refuses at once: no other pass")
}
