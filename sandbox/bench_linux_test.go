package sandbox

import (
	"context"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// Measurements for the closing note. Run without the race
// detector, with cordon's own binary as the init, for representative
// numbers:
//
//	make build && CORDON_TEST_INIT=$PWD/bin/cordon go test -run '^$' -bench . -benchtime 20x ./sandbox

func BenchmarkSessionCreate(b *testing.B) {
	m := newTestManager(b, nil)
	ctx := context.Background()
	for b.Loop() {
		s, err := m.NewSession(ctx, SessionSpec{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = s.Close(ctx)
		b.StartTimer()
	}
}

func BenchmarkSessionClose(b *testing.B) {
	m := newTestManager(b, nil)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		s, err := m.NewSession(ctx, SessionSpec{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		_ = s.Close(ctx)
	}
}

func BenchmarkExec(b *testing.B) {
	m := newTestManager(b, nil)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		spec SessionSpec
		req  ExecRequest
	}{
		{"argv", SessionSpec{}, ExecRequest{Argv: []string{"true"}}},
		{"script", SessionSpec{}, ExecRequest{Script: "echo hi"}},
		{"carry script", SessionSpec{Carry: true}, ExecRequest{Script: "echo hi"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newTestSession(b, m, bc.spec)
			for b.Loop() {
				res, err := s.Exec(ctx, bc.req)
				if err != nil || res.ExitCode != 0 {
					b.Fatal(err, res.ExitCode)
				}
			}
		})
	}
	b.Run("throwaway", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Exec(ctx, ExecRequest{Argv: []string{"true"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkStartWait(b *testing.B) {
	m := newTestManager(b, nil)
	s := newTestSession(b, m, SessionSpec{})
	ctx := context.Background()
	for b.Loop() {
		p, err := s.Start(ctx, StartRequest{Argv: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdleSessions reports the memory of idle sessions: the host
// process's own growth (VmRSS, after a GC) and the resident memory of each
// session's bubblewrap pair and init.
func BenchmarkIdleSessions(b *testing.B) {
	const n = 10
	for b.Loop() {
		b.StopTimer()
		m := newTestManager(b, nil)
		runtime.GC()
		debug.FreeOSMemory()
		before := vmRSS(os.Getpid())
		var ss []*Session
		for range n {
			ss = append(ss, newTestSession(b, m, SessionSpec{}))
		}
		runtime.GC()
		debug.FreeOSMemory()
		after := vmRSS(os.Getpid())
		var bw, init, pss int
		for _, s := range ss {
			st, _ := proc.ReadStat(int(s.initPid.Load()))
			for _, pid := range []int{s.sb.BwrapPid(), st.PPid} {
				bw += vmRSS(pid)
				pss += pssOf(pid)
			}
			init += vmRSS(int(s.initPid.Load()))
			pss += pssOf(int(s.initPid.Load()))
		}
		b.ReportMetric(float64(after-before)/n, "host-kB/session")
		b.ReportMetric(float64(bw)/n, "bwrap-rss-kB/session")
		b.ReportMetric(float64(init)/n, "init-rss-kB/session")
		// Proportional: pages shared between sessions (the binaries,
		// libc) are divided among them.
		b.ReportMetric(float64(pss)/n, "sandbox-pss-kB/session")
		_ = m.Close(context.Background())
		b.StartTimer()
	}
}

// vmRSS is a process's resident set in kB.
func vmRSS(pid int) int { return procField(pid, "status", "VmRSS:") }

// pssOf is a process's proportional set size in kB.
func pssOf(pid int) int { return procField(pid, "smaps_rollup", "Pss:") }

func procField(pid int, file, key string) int {
	buf, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(buf), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
