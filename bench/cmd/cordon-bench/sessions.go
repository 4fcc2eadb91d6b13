package main

// Section f: sessions, through the library (package sandbox) running in
// this process: the exec round trip against a direct fork+exec and a
// one-shot `cordon -- /bin/true`, the memory of idle sessions, and the time
// to kill a large process tree.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
	"golang.org/x/sys/unix"
)

// sessionsResult is section f.
type sessionsResult struct {
	// Init is the binary that played the sessions' init (Options.Exe).
	Init string             `json:"init"`
	Exec *sessionExecResult `json:"exec,omitempty"`
	// Daemon says why the daemon's round trip was not measured.
	Daemon string      `json:"daemon"`
	Idle   *idleResult `json:"idle,omitempty"`
	Kill   *killResult `json:"kill,omitempty"`
	// Status is what results.json held before section f was measured.
	Status string `json:"status,omitempty"`
}

// Names of the exec round-trip variants.
const (
	rtDirect    = "direct"
	rtLibrary   = "library"
	rtThrowaway = "throwaway"
	rtOneShot   = "one-shot"
)

// sessionExecResult is one command run to completion, four ways, in
// alternating rounds; milliseconds per command, as the caller sees it.
type sessionExecResult struct {
	Rounds      int `json:"rounds"`
	OpsPerRound int `json:"ops_per_round"`
	// Variants: direct (os/exec of /bin/true on the host), library
	// (Session.Exec in an existing session), throwaway (Manager.Exec
	// without a session: a sandbox made and closed per command), one-shot
	// (`cordon --policy P -- /bin/true` as a child process).
	Variants []*opStats `json:"variants"`
	// Ratios are computed within each round from that round's medians.
	Ratios []*ratio `json:"ratios"`
}

type opStats struct {
	Name  string    `json:"name"`
	MS    dist      `json:"ms"` // every op of every round
	round []float64 // per-round medians
}

func (r *sessionExecResult) variant(name string) *opStats {
	if r == nil {
		return nil
	}
	for _, v := range r.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

func (r *sessionExecResult) ratio(name string) *ratio {
	if r == nil {
		return nil
	}
	for _, x := range r.Ratios {
		if x.Name == name {
			return x
		}
	}
	return nil
}

// idleResult is the memory of idle sessions, per session, in KiB; the
// median over runs. Each run measures the same sessions twice: fresh (they
// have run nothing) and after each ran one command (`/bin/true` through
// Session.Exec), then sat idle again.
type idleResult struct {
	Sessions int          `json:"sessions"`
	Runs     int          `json:"runs"`
	States   []*idleState `json:"states"`
}

type idleState struct {
	Name string `json:"name"`
	// Host side: the process that embeds the library (this harness), its
	// growth from before the sessions to now, each reading taken after
	// runtime.GC and debug.FreeOSMemory, divided by Sessions.
	HostRSSKiB  dist      `json:"host_vmrss_kib"`
	HostPSSKiB  dist      `json:"host_pss_kib"`
	HeapKiB     dist      `json:"go_heap_inuse_kib"`
	StackKiB    dist      `json:"go_stack_inuse_kib"`
	Threads     dist      `json:"os_threads"`
	Goroutines  dist      `json:"goroutines"`
	OpenFDs     dist      `json:"open_fds"`
	HostRSSRuns []float64 `json:"host_vmrss_kib_runs"`
	// Sandbox side, from /proc/PID/smaps_rollup of each session's
	// processes, summed by role and divided by Sessions.
	Sandbox []*roleMem `json:"sandbox"`
	// ProcsPerSession is how many sandbox processes were found per
	// session (3: bwrap outside, bwrap as pid 1 inside, the init).
	ProcsPerSession float64 `json:"procs_per_session"`
}

type roleMem struct {
	Role    string `json:"role"`
	RSSKiB  dist   `json:"rss_kib"`
	PSSKiB  dist   `json:"pss_kib"`
	PrivKiB dist   `json:"private_kib"` // Private_Clean + Private_Dirty
}

func (r *idleState) role(name string) *roleMem {
	if r == nil {
		return nil
	}
	for _, x := range r.Sandbox {
		if x.Role == name {
			return x
		}
	}
	return nil
}

// worstOrNil is the state with the largest host-side growth: what the bar
// is judged on.
func (r *idleResult) worstOrNil() *idleState {
	if r == nil {
		return nil
	}
	var w *idleState
	for _, st := range r.States {
		if w == nil || st.HostRSSKiB.Median > w.HostRSSKiB.Median {
			w = st
		}
	}
	return w
}

// killResult is Process.Kill of a tree of Tree processes (the leader and
// its descendants), in milliseconds from the call, and the same tree
// signalled directly, for reference.
type killResult struct {
	Tree  int     `json:"tree"`
	Runs  int     `json:"runs"`
	Grace float64 `json:"grace_ms"`
	// Library is Process.Kill(grace).
	Library killTimes `json:"library"`
	// Direct sends SIGTERM and SIGCONT through pidfds opened beforehand
	// (no tree walk): the kernel's floor for the same work.
	Direct killTimes `json:"direct"`
	// Proposal walks the tree as the library does (pidfd_open, a stat
	// check, the parent still alive, for each member) but lists children
	// by reading /proc/PID/task/ and each TID/children, without
	// filepath.Glob, then sends the same signals: sizes the fix proposed
	// in BENCHMARKS.md for sandbox/tree_linux.go's childrenOf.
	Proposal *killTimes `json:"proposal_readdir_walk,omitempty"`
	// BuildMS is how long the tree took to start: context.
	BuildMS dist `json:"build_ms"`
	// Escalated counts library runs in which the grace ran out (SIGKILL).
	Escalated int `json:"escalated"`
	// Survivors is the most processes found alive below the session's
	// init in /proc after Kill returned, over all runs.
	Survivors int `json:"survivors"`
}

// killTimes are milliseconds from the kill's start.
type killTimes struct {
	// FirstExitMS: until the first member exited (its pidfd, opened
	// before the kill, became readable).
	FirstExitMS dist `json:"first_exit_ms"`
	// LastExitMS: until the last member exited: zero survivors.
	LastExitMS dist `json:"last_exit_ms"`
	// LeaderExitMS: until the leader (the top shell) exited.
	LeaderExitMS dist `json:"leader_exit_ms"`
	// ShimExitMS: until the process's monitor exited. The shim is the
	// tree's subreaper and exits when it has no child left: every member
	// has been reaped, nothing of the tree is left even as a zombie.
	ShimExitMS dist `json:"shim_exit_ms"`
	// ReturnMS: until Kill returned (the library saw the tree gone); for
	// Direct, until the last signal was sent.
	ReturnMS dist `json:"returned_ms"`
}

// Sandbox process roles, from a session's bubblewrap down.
const (
	roleBwrapOuter = "bwrap (outside the namespace)"
	roleBwrapInner = "bwrap (pid 1 in the namespace)"
	roleInit       = "init"
	roleTotal      = "sandbox total"
)

func (h *harness) sessions(res *results) error {
	sr := &sessionsResult{Init: h.cordon, Daemon: h.daemonStatus()}
	res.Sessions = sr
	m := h.newManager()
	err := h.sessionExec(sr, m)
	closeManager(m)
	if err != nil {
		return fmt.Errorf("exec round trip: %w", err)
	}
	if sr.Idle, err = h.idleSessions(); err != nil {
		return fmt.Errorf("idle sessions: %w", err)
	}
	if sr.Kill, err = h.killTree(); err != nil {
		return fmt.Errorf("kill a tree: %w", err)
	}
	return nil
}

// newManager makes the library's Manager the way a program embedding it
// would, with cordon's own binary as the init (the daemon's case; this
// harness's main also dispatches runner.InitArg, so the default works too).
func (h *harness) newManager() *sandbox.Manager {
	return sandbox.NewManager(sandbox.Options{
		Env: []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=/tmp"},
		Dir: h.cwd,
		Exe: h.cordon,
	})
}

func closeManager(m *sandbox.Manager) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = m.Close(ctx)
}

// daemonStatus says why the daemon's round trip is not measured: this
// harness measures it once the daemon (cordon serve and package client) is
// in the tree and a measurement is written for it.
func (h *harness) daemonStatus() string {
	if err := exec.CommandContext(h.ctx, h.goTool, "list", "./client").Run(); err != nil {
		return "not measured: daemon not merged yet (`go list ./client` fails in this tree)"
	}
	if err := exec.CommandContext(h.ctx, h.cordon, "serve", "--help").Run(); err != nil {
		return "not measured: daemon not merged yet (`cordon serve --help` fails)"
	}
	// client's BenchmarkExec runs the same Manager in process and behind
	// the daemon's API on its Unix socket.
	rs, err := h.goBench("./client", `^BenchmarkExec$`, "CORDON_TEST_INIT="+h.cordon)
	if err != nil {
		return "not measured: " + strings.SplitN(err.Error(), "\n", 2)[0]
	}
	ns := map[string]float64{}
	for _, r := range rs {
		name := strings.TrimPrefix(r.Name, "BenchmarkExec/")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i] // the GOMAXPROCS suffix
		}
		ns[name] = r.NsPerOp
	}
	ls, ds := ns["library/session"], ns["daemon/session"]
	lt, dt := ns["library/throwaway"], ns["daemon/throwaway"]
	if ls == 0 || ds == 0 {
		return "not measured: client's BenchmarkExec reported no session figures"
	}
	return fmt.Sprintf("in a session: library %.2f ms, daemon %.2f ms per exec (daemon/library %.2f); throwaway: library %.1f ms, daemon %.1f ms (go test -bench BenchmarkExec ./client)",
		ls/1e6, ds/1e6, ds/ls, lt/1e6, dt/1e6)
}

// sessionExec times one /bin/true run to completion: directly, through the
// library in an existing session, through the library in a throwaway
// sandbox, and as a one-shot cordon; rounds alternate the variants in a
// shuffled order (roundOrder).
func (h *harness) sessionExec(sr *sessionsResult, m *sandbox.Manager) error {
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Minute)
	defer cancel()
	s, err := m.NewSession(ctx, sandbox.SessionSpec{})
	if err != nil {
		return err
	}
	req := sandbox.ExecRequest{Argv: []string{"/bin/true"}}
	check := func(res sandbox.ExecResult, err error) error {
		if err != nil {
			return err
		}
		if res.ExitCode != 0 || res.Error != "" {
			return fmt.Errorf("/bin/true: exit %d %s %s", res.ExitCode, res.Error, res.Stderr)
		}
		return nil
	}
	oneShot := h.argv(h.cordonV, []string{"/bin/true"})
	type variantFn struct {
		name string
		fn   func() error
	}
	vs := []variantFn{
		{rtDirect, func() error { return exec.CommandContext(ctx, "/bin/true").Run() }},
		{rtLibrary, func() error { return check(s.Exec(ctx, req)) }},
		{rtThrowaway, func() error { return check(m.Exec(ctx, req)) }},
		{rtOneShot, func() error {
			cmd := exec.CommandContext(ctx, oneShot[0], oneShot[1:]...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%v: %s", err, stderr.String())
			}
			return nil
		}},
	}
	ops := h.cfg.SessionExecOps
	r := &sessionExecResult{Rounds: h.cfg.Rounds, OpsPerRound: ops}
	stats := map[string]*opStats{}
	all := map[string][]float64{}
	for _, v := range vs {
		st := &opStats{Name: v.name}
		stats[v.name] = st
		r.Variants = append(r.Variants, st)
		for range 3 { // warm-up
			if err := v.fn(); err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
		}
	}
	for round := 0; round < h.cfg.Rounds; round++ {
		for _, j := range roundOrder(len(vs), round) {
			v := vs[j]
			var xs []float64
			for range ops {
				t0 := time.Now()
				if err := v.fn(); err != nil {
					return fmt.Errorf("%s: %w", v.name, err)
				}
				xs = append(xs, ms(time.Since(t0)))
			}
			stats[v.name].round = append(stats[v.name].round, median(xs))
			all[v.name] = append(all[v.name], xs...)
		}
		var parts []string
		for _, v := range r.Variants {
			parts = append(parts, fmt.Sprintf("%s %.2f", v.Name, v.round[len(v.round)-1]))
		}
		h.logf("sessions: exec round %d/%d: %s (ms, median of %d)", round+1, h.cfg.Rounds, strings.Join(parts, ", "), ops)
	}
	for _, v := range r.Variants {
		v.MS = summarize(all[v.Name])
	}
	for _, pr := range [][2]string{
		{rtLibrary, rtDirect}, {rtThrowaway, rtDirect}, {rtOneShot, rtDirect},
		{rtThrowaway, rtLibrary}, {rtOneShot, rtLibrary},
	} {
		r.Ratios = append(r.Ratios, newRatio(pr[0], pr[1], "wall", stats[pr[0]].round, stats[pr[1]].round))
	}
	sr.Exec = r
	return s.Close(ctx)
}

// idleSessions starts cfg.IdleSessions sessions that run nothing and
// measures what they hold, then again after each ran one command;
// cfg.IdleRuns times with a fresh Manager each.
func (h *harness) idleSessions() (*idleResult, error) {
	n := h.cfg.IdleSessions
	r := &idleResult{Sessions: n, Runs: h.cfg.IdleRuns}
	roles := []string{roleBwrapOuter, roleBwrapInner, roleInit, roleTotal}
	type acc struct {
		rss, pss, heap, stack, threads, gors, fds, procs []float64
		role                                             map[string]*[3][]float64
	}
	names := []string{"fresh: started, nothing run", "after one `/bin/true` each (`Session.Exec`), idle again"}
	accs := make([]*acc, len(names))
	for i := range accs {
		accs[i] = &acc{role: map[string]*[3][]float64{}}
		for _, name := range roles {
			accs[i].role[name] = &[3][]float64{}
		}
	}
	// record adds one reading of the n sessions to a.
	record := func(a *acc, before selfMem) error {
		time.Sleep(time.Second) // idle: nothing runs, nothing is decided
		after := readSelfMem()
		sb, found := sandboxMem()
		if found != 3*n {
			return fmt.Errorf("found %d sandbox processes for %d sessions, want %d (bwrap, bwrap, init each)", found, n, 3*n)
		}
		per := func(x, y int) float64 { return float64(y-x) / float64(n) }
		a.rss = append(a.rss, per(before.rss, after.rss))
		a.pss = append(a.pss, per(before.pss, after.pss))
		a.heap = append(a.heap, per(before.heap, after.heap))
		a.stack = append(a.stack, per(before.stack, after.stack))
		a.threads = append(a.threads, per(before.threads, after.threads))
		a.gors = append(a.gors, per(before.goroutines, after.goroutines))
		a.fds = append(a.fds, per(before.fds, after.fds))
		a.procs = append(a.procs, float64(found)/float64(n))
		var tot smaps
		for _, name := range roles[:3] {
			x := sb[name]
			tot.rss, tot.pss, tot.priv = tot.rss+x.rss, tot.pss+x.pss, tot.priv+x.priv
		}
		sb[roleTotal] = tot
		for _, name := range roles {
			v, x := a.role[name], sb[name]
			v[0] = append(v[0], float64(x.rss)/float64(n))
			v[1] = append(v[1], float64(x.pss)/float64(n))
			v[2] = append(v[2], float64(x.priv)/float64(n))
		}
		return nil
	}
	oneRun := func(run int) error {
		ctx, cancel := context.WithTimeout(h.ctx, 3*time.Minute)
		defer cancel()
		m := h.newManager()
		defer closeManager(m)
		// Warm-up: one session that runs a command, closed again, so code
		// paths and one-time state (libseccomp, the policy package's
		// tables) are in place before the first reading.
		s, err := m.NewSession(ctx, sandbox.SessionSpec{})
		if err != nil {
			return err
		}
		_, err = s.Exec(ctx, sandbox.ExecRequest{Argv: []string{"/bin/true"}})
		_ = s.Close(ctx)
		if err != nil {
			return err
		}
		before := readSelfMem()
		var ss []*sandbox.Session
		for i := 0; i < n; i++ {
			s, err := m.NewSession(ctx, sandbox.SessionSpec{})
			if err != nil {
				return fmt.Errorf("session %d of %d: %w", i+1, n, err)
			}
			ss = append(ss, s)
		}
		if err := record(accs[0], before); err != nil {
			return err
		}
		for _, s := range ss {
			res, err := s.Exec(ctx, sandbox.ExecRequest{Argv: []string{"/bin/true"}})
			if err != nil || res.ExitCode != 0 {
				return fmt.Errorf("/bin/true: exit %d, %v", res.ExitCode, err)
			}
		}
		if err := record(accs[1], before); err != nil {
			return err
		}
		h.logf("sessions: idle run %d/%d: %d sessions, host VmRSS %+.0f KiB/session fresh, %+.0f after one exec each (%.1f threads, %.1f goroutines each); sandbox PSS %.0f KiB/session",
			run+1, h.cfg.IdleRuns, n, accs[0].rss[run], accs[1].rss[run], accs[1].threads[run], accs[1].gors[run], (*accs[1].role[roleTotal])[1][run])
		return nil
	}
	for run := 0; run < h.cfg.IdleRuns; run++ {
		if err := oneRun(run); err != nil {
			return nil, err
		}
	}
	for i, a := range accs {
		st := &idleState{Name: names[i],
			HostRSSKiB: summarize(a.rss), HostPSSKiB: summarize(a.pss), HeapKiB: summarize(a.heap), StackKiB: summarize(a.stack),
			Threads: summarize(a.threads), Goroutines: summarize(a.gors), OpenFDs: summarize(a.fds),
			HostRSSRuns: a.rss, ProcsPerSession: median(a.procs)}
		for _, name := range roles {
			v := a.role[name]
			st.Sandbox = append(st.Sandbox, &roleMem{Role: name, RSSKiB: summarize(v[0]), PSSKiB: summarize(v[1]), PrivKiB: summarize(v[2])})
		}
		r.States = append(r.States, st)
	}
	return r, nil
}

// selfMem is this process's memory, in KiB, and its thread, goroutine and
// descriptor counts.
type selfMem struct {
	rss, pss, heap, stack int
	threads, goroutines   int
	fds                   int
}

// readSelfMem collects garbage and returns freed memory to the kernel
// first, so the reading holds what is live.
func readSelfMem() selfMem {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := selfMem{
		rss:        procField(os.Getpid(), "status", "VmRSS:"),
		threads:    procField(os.Getpid(), "status", "Threads:"),
		pss:        readSmaps(os.Getpid()).pss,
		heap:       int(ms.HeapInuse / 1024),
		stack:      int(ms.StackInuse / 1024),
		goroutines: runtime.NumGoroutine(),
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		m.fds = len(ents)
	}
	return m
}

func procField(pid int, file, key string) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// smaps is a process's resident memory from smaps_rollup, in KiB.
type smaps struct{ rss, pss, priv int }

func readSmaps(pid int) smaps {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return smaps{}
	}
	var s smaps
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Rss:":
			s.rss = n
		case "Pss:":
			s.pss = n
		case "Private_Clean:", "Private_Dirty:":
			s.priv += n
		}
	}
	return s
}

// sandboxMem sums the memory of the sandboxes this process started, by
// role: bubblewrap started by the library (a child of this process),
// bubblewrap's pid 1 of the new namespace (its child), and the init (that
// one's child). It returns the sums and how many processes it found.
func sandboxMem() (map[string]smaps, int) {
	kids := procChildren(procSnapshot())
	out := map[string]smaps{}
	found := 0
	add := func(role string, pid int) {
		x, y := out[role], readSmaps(pid)
		out[role] = smaps{x.rss + y.rss, x.pss + y.pss, x.priv + y.priv}
		found++
	}
	for _, outer := range kids[os.Getpid()] {
		if outer.comm != "bwrap" {
			continue
		}
		add(roleBwrapOuter, outer.pid)
		for _, inner := range kids[outer.pid] {
			add(roleBwrapInner, inner.pid)
			for _, init := range kids[inner.pid] {
				add(roleInit, init.pid)
			}
		}
	}
	return out, found
}

type procEntry struct {
	pid, ppid int
	comm      string
	state     byte
}

// procSnapshot reads every process's /proc/PID/stat.
func procSnapshot() []procEntry {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procEntry, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// comm may hold spaces and parentheses: it ends at the last ')'.
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(string(b[j+1:]))
		if len(f) < 2 || len(f[0]) != 1 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, procEntry{pid: pid, ppid: ppid, comm: string(b[i+1 : j]), state: f[0][0]})
	}
	return out
}

func procChildren(snap []procEntry) map[int][]procEntry {
	kids := map[int][]procEntry{}
	for _, p := range snap {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	return kids
}

// descendants lists root's live (not zombie) descendants, root excluded.
func descendants(kids map[int][]procEntry, root int) []procEntry {
	var out []procEntry
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			if c.state != 'Z' && c.state != 'X' {
				out = append(out, c)
			}
			queue = append(queue, c.pid)
		}
	}
	return out
}

// treeScript builds a tree of $1 levels: each level starts $2 sleepers and
// the next level in a subshell, then waits. The leader is the first level,
// so the tree holds $1 * ($2 + 1) processes: $1 shells and $1 * $2 sleepers.
const treeScript = `grow() {
	i=0
	while [ $i -lt $2 ]; do sleep 600 & i=$((i + 1)); done
	if [ $1 -gt 1 ]; then ( grow $(($1 - 1)) $2 ) & fi
	wait
}
grow "$1" "$2"`

// killTree starts a tree of cfg.KillTree processes in a fresh session,
// waits until every one of them exists (counted in /proc), and times
// Process.Kill until none is left; alternating with the same tree
// signalled directly, and walked the proposed way then signalled.
func (h *harness) killTree() (*killResult, error) {
	const perLevel = 49 // sleepers per level
	levels := max(h.cfg.KillTree/(perLevel+1), 1)
	tree := levels * (perLevel + 1)
	grace := 2 * time.Second
	r := &killResult{Tree: tree, Runs: h.cfg.KillRuns, Grace: ms(grace)}
	type acc struct{ first, last, returned, leader, shim []float64 }
	accs := map[killMode]*acc{killLibrary: {}, killDirect: {}, killProposal: {}}
	modes := []killMode{killLibrary, killDirect, killProposal}
	var build []float64
	for run := 0; run < h.cfg.KillRuns; run++ {
		for i := range modes {
			mode := modes[(i+run)%len(modes)]
			x, err := h.killOnce(levels, perLevel, tree, grace, mode)
			if err != nil {
				return nil, fmt.Errorf("run %d, %s: %w", run+1, mode, err)
			}
			if mode == killLibrary {
				r.Survivors = max(r.Survivors, x.survivors)
				if x.escalated {
					r.Escalated++
				}
			}
			a := accs[mode]
			a.first, a.last = append(a.first, x.firstExit), append(a.last, x.lastExit)
			a.returned = append(a.returned, x.returned)
			a.leader, a.shim = append(a.leader, x.leaderExit), append(a.shim, x.shimExit)
			build = append(build, x.build)
			h.logf("sessions: kill run %d/%d, %s: %d processes built in %.0f ms; first exit %.1f ms, leader %.1f, last %.1f, shim exited %.1f, returned %.1f ms after the start; %d survivors",
				run+1, h.cfg.KillRuns, mode, tree, x.build, x.firstExit, x.leaderExit, x.lastExit, x.shimExit, x.returned, x.survivors)
		}
	}
	sum := func(a *acc) killTimes {
		return killTimes{FirstExitMS: summarize(a.first), LastExitMS: summarize(a.last), ReturnMS: summarize(a.returned),
			LeaderExitMS: summarize(a.leader), ShimExitMS: summarize(a.shim)}
	}
	prop := sum(accs[killProposal])
	r.Library, r.Direct, r.Proposal, r.BuildMS = sum(accs[killLibrary]), sum(accs[killDirect]), &prop, summarize(build)
	return r, nil
}

// killMode is how a tree is killed.
type killMode int

const (
	killLibrary  killMode = iota // Process.Kill
	killDirect                   // signals through pidfds already open
	killProposal                 // the library's walk without filepath.Glob, then signals
)

func (m killMode) String() string {
	return [...]string{"Process.Kill", "direct signals", "proposal: walk without Glob"}[m]
}

type killRun struct {
	build, firstExit, lastExit, returned float64
	leaderExit, shimExit                 float64
	survivors                            int
	escalated                            bool
}

func (h *harness) killOnce(levels, perLevel, tree int, grace time.Duration, mode killMode) (killRun, error) {
	var x killRun
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Minute)
	defer cancel()
	m := h.newManager()
	defer closeManager(m)
	s, err := m.NewSession(ctx, sandbox.SessionSpec{})
	if err != nil {
		return x, err
	}
	// The session's init: the only one below this process.
	initPid := 0
	kids := procChildren(procSnapshot())
	for _, outer := range kids[os.Getpid()] {
		for _, inner := range kids[outer.pid] {
			for _, init := range kids[inner.pid] {
				initPid = init.pid
			}
		}
	}
	if initPid == 0 {
		return x, errors.New("the session's init is not in /proc")
	}
	t0 := time.Now()
	p, err := s.Start(ctx, sandbox.StartRequest{Argv: []string{"/bin/sh", "-c", treeScript, "tree", strconv.Itoa(levels), strconv.Itoa(perLevel)}})
	if err != nil {
		return x, err
	}
	// The tree is the init's descendants minus the process's monitor (the
	// shim, the init's child). Complete when every member is there and
	// every sleeper has executed sleep.
	var members []procEntry
	shimPid := 0
	for {
		kids := procChildren(procSnapshot())
		members = members[:0]
		for _, shim := range kids[initPid] {
			shimPid = shim.pid
			members = append(members, descendants(kids, shim.pid)...)
		}
		sleepers := 0
		for _, m := range members {
			if m.comm == "sleep" {
				sleepers++
			}
		}
		if len(members) > tree {
			return x, fmt.Errorf("the tree has %d processes, want %d", len(members), tree)
		}
		if len(members) == tree && sleepers == levels*perLevel {
			break
		}
		if ctx.Err() != nil {
			return x, fmt.Errorf("the tree reached %d of %d processes (%d sleepers)", len(members), tree, sleepers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	x.build = ms(time.Since(t0))
	// A pidfd per member, taken before the kill: readable once that
	// process has exited; its fdinfo says Pid: -1 once it is reaped.
	// Parents come before children, as in the library's walk.
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, m := range members {
		fd, err := unix.PidfdOpen(m.pid, 0)
		if err != nil {
			return x, fmt.Errorf("pidfd_open %d: %w", m.pid, err)
		}
		fds = append(fds, fd)
	}
	// The shim exits once it has reaped the last member: the tree is gone.
	shimFD, err := unix.PidfdOpen(shimPid, 0)
	if err != nil {
		return x, fmt.Errorf("pidfd_open of the shim %d: %w", shimPid, err)
	}
	fds = append(fds, shimFD) // closed with the members'
	done := make(chan error, 1)
	var returned time.Time
	start := time.Now()
	switch mode {
	case killLibrary:
		go func() {
			_, err := p.Kill(ctx, grace)
			returned = time.Now()
			done <- err
		}()
	case killDirect:
		go func() {
			for _, fd := range fds[:len(fds)-1] { // not the shim
				_ = unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0)
				_ = unix.PidfdSendSignal(fd, unix.SIGCONT, nil, 0)
			}
			returned = time.Now()
			done <- nil
		}()
	case killProposal:
		go func() {
			walked := readDirWalk(shimPid, shimFD)
			for _, fd := range walked {
				_ = unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0)
				_ = unix.PidfdSendSignal(fd, unix.SIGCONT, nil, 0)
			}
			for _, fd := range walked {
				unix.Close(fd)
			}
			returned = time.Now()
			if len(walked) != tree {
				done <- fmt.Errorf("the walk found %d members, want %d", len(walked), tree)
				return
			}
			done <- nil
		}()
	}
	exits, err := waitAllExit(ctx, fds)
	if err != nil {
		return x, err
	}
	treeExits := exits[:len(exits)-1]
	first, last := slices.MinFunc(treeExits, time.Time.Compare), slices.MaxFunc(treeExits, time.Time.Compare)
	x.firstExit, x.lastExit = ms(first.Sub(start)), ms(last.Sub(start))
	x.leaderExit, x.shimExit = ms(exits[0].Sub(start)), ms(exits[len(exits)-1].Sub(start))
	if err := <-done; err != nil {
		return x, fmt.Errorf("killing the tree: %w", err)
	}
	x.returned = ms(returned.Sub(start))
	x.escalated = mode == killLibrary && returned.Sub(start) >= grace
	// Anything of the tree still alive is below the init: the shim, or
	// the init itself once the shim is gone. And no member is left as a
	// zombie: each pidfd says its pid is freed.
	x.survivors = len(descendants(procChildren(procSnapshot()), initPid))
	// Process.Kill returns once the shim reaped the tree. The reference
	// ways signal directly, and a member whose shim exited first is
	// reaped by the init a moment later: they get a short grace.
	reapBy := time.Now()
	if mode != killLibrary {
		reapBy = reapBy.Add(2 * time.Second)
	}
	for _, fd := range fds {
		for pidOfFD(fd) != -1 {
			if time.Now().After(reapBy) {
				return x, errors.New("a member of the tree was not reaped when Kill returned")
			}
			time.Sleep(time.Millisecond)
		}
	}
	if mode != killLibrary {
		if _, err := p.Wait(ctx); err != nil {
			return x, err
		}
	}
	return x, s.Close(ctx)
}

// readDirWalk is the library's tree walk (sandbox/tree_linux.go walkTree:
// breadth first, each child's pidfd opened, then its stat checked to name
// the parent and not be a zombie, and the parent and child still alive)
// with one change: a process's children are listed from each
// /proc/PID/task/TID/children found by reading /proc/PID/task, not by
// filepath.Glob("/proc/PID/task/*/children"), which also lists every
// /proc/PID/task/TID/ directory (about 50 entries) to match "children".
// It returns the members' pidfds, parents first.
func readDirWalk(root, rootFD int) []int {
	alive := func(fd int) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		return err == nil && n == 0
	}
	var out []int
	type level struct{ pid, fd int }
	queue := []level{{root, rootFD}}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		dir := "/proc/" + strconv.Itoa(parent.pid) + "/task/"
		tasks, _ := os.ReadDir(dir)
		for _, t := range tasks {
			b, err := os.ReadFile(dir + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, w := range strings.Fields(string(b)) {
				c, err := strconv.Atoi(w)
				if err != nil {
					continue
				}
				fd, err := unix.PidfdOpen(c, 0)
				if err != nil {
					continue
				}
				st, err := os.ReadFile("/proc/" + w + "/stat")
				j := bytes.LastIndexByte(st, ')')
				var f []string
				if err == nil && j >= 0 {
					f = strings.Fields(string(st[j+1:]))
				}
				if len(f) < 2 || f[1] != strconv.Itoa(parent.pid) || f[0] == "Z" || f[0] == "X" || !alive(parent.fd) || !alive(fd) {
					unix.Close(fd)
					continue
				}
				out = append(out, fd)
				queue = append(queue, level{c, fd})
			}
		}
	}
	return out
}

// waitAllExit waits until every pidfd is readable (its process has
// exited) and returns when each was seen to. epoll: each wake-up costs the
// events it returns, not the number of pidfds.
func waitAllExit(ctx context.Context, fds []int) ([]time.Time, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(ep)
	index := map[int32]int{}
	for i, fd := range fds {
		index[int32(fd)] = i
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return nil, err
		}
	}
	at := make([]time.Time, len(fds))
	events := make([]unix.EpollEvent, 64)
	for left := len(fds); left > 0; {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%d of %d processes still alive", left, len(fds))
		}
		n, err := unix.EpollWait(ep, events, 100)
		if err == unix.EINTR || n == 0 {
			continue
		}
		if err != nil {
			return nil, err
		}
		now := time.Now()
		for _, ev := range events[:n] {
			at[index[ev.Fd]] = now
			// Level-triggered: an exited process stays readable.
			_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, int(ev.Fd), nil)
		}
		left -= n
	}
	return at, nil
}

// pidOfFD is the pid behind a pidfd (its fdinfo's Pid:), -1 once reaped.
func pidOfFD(fd int) int {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
