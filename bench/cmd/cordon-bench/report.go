package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

type results struct {
	Config     config          `json:"config"`
	Machine    machine         `json:"machine"`
	Started    time.Time       `json:"started"`
	Finished   time.Time       `json:"finished"`
	CPUMethod  string          `json:"cpu_method,omitempty"`
	Flags      string          `json:"bwrap_flags,omitempty"`
	PerExec    *loopResult     `json:"per_exec,omitempty"`
	Parallel   []*loopResult   `json:"parallel,omitempty"`
	Startup    *startupResult  `json:"startup,omitempty"`
	Latency    *latencyResult  `json:"decision_latency,omitempty"`
	Teardown   *teardownResult `json:"teardown,omitempty"`
	Policy     []benchResult   `json:"policy,omitempty"`
	Supervisor []benchResult   `json:"supervisor_internals,omitempty"`
	Sessions   *sessionsResult `json:"sessions,omitempty"`
	Network    *networkResult  `json:"network,omitempty"`
	Bars       []bar           `json:"bars"`
}

type machine struct {
	NProc      int    `json:"nproc"`
	CPU        string `json:"cpu"`
	Kernel     string `json:"kernel"`
	Bwrap      string `json:"bwrap"`
	Go         string `json:"go"`
	Cordon     string `json:"cordon"`
	LoadBefore string `json:"loadavg_before"`
	LoadAfter  string `json:"loadavg_after"`
}

func machineInfo(h *harness) machine {
	m := machine{NProc: runtime.NumCPU(), LoadBefore: loadavg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	m.Bwrap = firstLine(h.bwrap, "--version")
	m.Go = firstLine(h.goTool, "version")
	m.Cordon = firstLine(h.cordon, "version")
	return m
}

func firstLine(prog string, args ...string) string {
	out, err := exec.Command(prog, args...).Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// bar is one target of issue 7, judged on this run's figures.
type bar struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Target string `json:"target"`
	Status string `json:"status"` // met, NOT met, not measured
}

func judge(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func evaluateBars(r *results) []bar {
	var bars []bar
	add := func(name, target string, have bool, value string, ok bool) {
		b := bar{Name: name, Target: target, Status: "not measured", Value: "-"}
		if have {
			b.Value, b.Status = value, judge(ok)
		}
		bars = append(bars, b)
	}
	w, c := r.PerExec.ratio("cordon/bwrap", "wall"), r.PerExec.ratio("cordon/bwrap", "cpu")
	add("per-exec wall, cordon/bwrap", "<= 1.08", w != nil, fmtRatio(w), w != nil && w.Median <= 1.08)
	add("per-exec CPU, cordon/bwrap", "<= 1.30", c != nil, fmtRatio(c), c != nil && c.Median <= 1.30)
	var p32 *ratio
	for _, p := range r.Parallel {
		if p.Parallel == 32 {
			p32 = p.ratio("cordon/bwrap", "wall")
		}
	}
	add("per-exec wall at 32 parallel loops, cordon/bwrap", "<= 1.10", p32 != nil, fmtRatio(p32), p32 != nil && p32.Median <= 1.10)
	if s := r.Startup; s != nil {
		add("startup, cordon/bare bwrap", "<= 2.5x", true, fmt.Sprintf("%.2fx (%.1f vs %.1f ms)", s.Ratio, s.CordonMS.Median, s.BwrapMS.Median), s.Ratio <= 2.5)
	} else {
		add("startup, cordon/bare bwrap", "<= 2.5x", false, "", false)
	}
	if l := r.Latency; l != nil && len(l.Variants) > 0 {
		v := l.Variants[0]
		add("decision latency, a program seen before, median (audit latency_us)", "<= 20 µs", true, fmt.Sprintf("%.0f µs", v.Seen.Median), v.Seen.Median <= 20)
		add("decision latency, a program seen before, p99 (audit latency_us)", "<= 100 µs", true, fmt.Sprintf("%.0f µs", v.Seen.P99), v.Seen.P99 <= 100)
	} else {
		add("decision latency, a program seen before (audit latency_us)", "median <= 20 µs, p99 <= 100 µs", false, "", false)
	}
	if t := r.Teardown; t != nil {
		add("teardown median", "< 5 ms", true, fmt.Sprintf("%.2f ms (p99 %.2f ms)", t.CordonMS.Median, t.CordonMS.P99), t.CordonMS.Median < 5)
	} else {
		add("teardown median", "< 5 ms", false, "", false)
	}
	worst, name := 0.0, ""
	for _, b := range r.Policy {
		if strings.HasSuffix(b.Name, "/rules=1000") && b.NsPerOp > worst {
			worst, name = b.NsPerOp, strings.TrimSuffix(strings.TrimPrefix(b.Name, "Benchmark"), "/rules=1000")
		}
	}
	add("one decision against 1,000 rules (worst benchmark)", "< 5 µs", worst > 0, fmt.Sprintf("%.2f µs (%s)", worst/1000, name), worst < 5000)
	var idle *idleResult
	if r.Sessions != nil {
		idle = r.Sessions.Idle
	}
	if w := idle.worstOrNil(); w != nil {
		host := w.HostRSSKiB.Median / 1024
		total := w.HostPSSKiB.Median/1024 + w.role(roleTotal).PSSKiB.Median/1024
		add("idle session RSS (host side)", "<= 15 MiB", true,
			fmt.Sprintf("%.2f MiB/session: VmRSS growth of the process using the library, %d sessions (%s); with the sandbox's own processes (PSS): %.2f MiB", host, idle.Sessions, w.Name, total),
			host <= 15)
	} else {
		add("idle session RSS (host side)", "<= 15 MiB", false, "", false)
	}
	if n := r.Network; n != nil {
		add("100 MB download through the proxy (CONNECT tunnel), proxied/direct", ">= 0.9", true, fmtRatio(n.ConnectRatio), n.ConnectRatio.Median >= 0.9)
		add("100 MB download through the proxy (SOCKS5 tunnel), proxied/direct", ">= 0.9", true, fmtRatio(n.SOCKSRatio), n.SOCKSRatio.Median >= 0.9)
		add("100 MB download through the proxy (plain HTTP), proxied/direct", ">= 0.9", true, fmtRatio(n.HTTPRatio), n.HTTPRatio.Median >= 0.9)
	} else {
		add("100 MB download through the proxy, proxied/direct", ">= 0.9", false, "", false)
	}
	return bars
}

func fmtRatio(r *ratio) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f (IQR %.2f-%.2f, n=%d)", r.Median, r.Q1, r.Q3, len(r.Rounds))
}

func writeJSON(path string, r *results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// printTable writes the results as Markdown, the form BENCHMARKS.md quotes.
func printTable(w io.Writer, r *results) {
	var b bytes.Buffer
	mode := "full"
	if r.Config.Quick {
		mode = "quick"
	}
	fmt.Fprintf(&b, "\n## cordon-bench (%s): %d CPUs, %s, kernel %s\n", mode, r.Machine.NProc, r.Machine.CPU, r.Machine.Kernel)
	fmt.Fprintf(&b, "%s; %s; %s; load average %s before, %s after\n", r.Machine.Bwrap, r.Machine.Go, r.Machine.Cordon, r.Machine.LoadBefore, r.Machine.LoadAfter)
	fmt.Fprintf(&b, "Ratios are medians of per-round ratios (A and B measured in the same round), with their interquartile range over rounds.\n\n")

	if r.PerExec != nil || len(r.Parallel) > 0 {
		fmt.Fprintf(&b, "### a, d: per exec of /bin/true (µs; wall timed inside the shell, CPU of the whole tree)\n\n")
		fmt.Fprintf(&b, "| loops | execs/run | variant | wall µs/exec | CPU µs/exec | wall vs bwrap | CPU vs bwrap | wall vs bare | CPU vs bare |\n")
		fmt.Fprintf(&b, "|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
		all := append([]*loopResult{}, r.PerExec)
		all = append(all, r.Parallel...)
		for _, l := range all {
			if l == nil {
				continue
			}
			for _, v := range l.Variants {
				cell := func(base, metric string) string {
					if v.Name == base {
						return "1"
					}
					x := l.ratio(v.Name+"/"+base, metric)
					if x == nil {
						return ""
					}
					return fmt.Sprintf("**%.2f** (%.2f-%.2f)", x.Median, x.Q1, x.Q3)
				}
				fmt.Fprintf(&b, "| %d | %d | %s | %.0f | %.0f | %s | %s | %s | %s |\n", l.Parallel, l.ExecsPerRun, v.Name,
					v.WallUSPerExec.Median, v.CPUUSPerExec.Median, cell("bwrap", "wall"), cell("bwrap", "cpu"), cell("bare", "wall"), cell("bare", "cpu"))
			}
			if x := l.ratio("cordon/floor", "wall"); x != nil {
				y := l.ratio("cordon/floor", "cpu")
				fmt.Fprintf(&b, "| %d | | cordon / the C floor supervisor | | | wall **%.2f** (%.2f-%.2f) | CPU **%.2f** (%.2f-%.2f) | | |\n",
					l.Parallel, x.Median, x.Q1, x.Q3, y.Median, y.Q1, y.Q3)
			}
			if x := l.ratio("cordon/cordon-strict", "wall"); x != nil {
				y := l.ratio("cordon/cordon-strict", "cpu")
				fmt.Fprintf(&b, "| %d | | ptrace verification's own cost: cordon / cordon --verify strict | | | wall %.2f (%.2f-%.2f) | CPU %.2f (%.2f-%.2f) | | |\n",
					l.Parallel, x.Median, x.Q1, x.Q3, y.Median, y.Q1, y.Q3)
			}
		}
		fmt.Fprintf(&b, "\nCPU: %s.\n\n", r.CPUMethod)
	}
	if s := r.Startup; s != nil {
		fmt.Fprintf(&b, "### b: startup, `cordon -- /bin/true` vs `bwrap <cordon's flags> /bin/true` (%d rounds, variants alternating)\n\n", s.Runs)
		fmt.Fprintf(&b, "| | median ms | p90 ms | min ms | vs bwrap (paired: median, IQR) |\n|---|---:|---:|---:|---:|\n")
		vs := s.Variants
		if len(vs) == 0 { // results.json from before the floor
			vs = []*startupVariant{{Name: "cordon", MS: s.CordonMS, VsBwrap: s.PairRatio}, {Name: "bwrap", MS: s.BwrapMS}}
		}
		for _, v := range vs {
			cell := "1"
			if v.Name != "bwrap" {
				cell = fmt.Sprintf("**%.2f** (%.2f-%.2f)", v.VsBwrap.Median, v.VsBwrap.Q1, v.VsBwrap.Q3)
			}
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %s |\n", startupLabel(v.Name), v.MS.Median, v.MS.P90, v.MS.Min, cell)
		}
		fmt.Fprintf(&b, "| **ratio** cordon/bwrap of the medians | **%.2f** | | | |\n", s.Ratio)
		if hf := s.Hyperfine; hf != nil {
			fmt.Fprintf(&b, "| hyperfine cross-check | cordon %.1f, bwrap %.1f: %.2f | | | |\n", hf.CordonMS, hf.BwrapMS, hf.Ratio)
		}
		b.WriteString("\n")
	}
	printLatency(&b, r.Latency)
	if t := r.Teardown; t != nil {
		fmt.Fprintf(&b, "### c: teardown, from the command's exit to the runner's exit (%d runs each)\n\n", t.Runs)
		fmt.Fprintf(&b, "| | median ms | p90 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| cordon | **%.2f** | %.2f | **%.2f** | %.2f |\n", t.CordonMS.Median, t.CordonMS.P90, t.CordonMS.P99, t.CordonMS.Max)
		names := make([]string, 0, len(t.Compare))
		for n := range t.Compare {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			d := t.Compare[n]
			fmt.Fprintf(&b, "| %s | **%.2f** | %.2f | **%.2f** | %.2f |\n", n, d.Median, d.P90, d.P99, d.Max)
		}
		fmt.Fprintf(&b, "| bwrap (reference) | %.2f | %.2f | %.2f | %.2f |\n\n", t.BwrapMS.Median, t.BwrapMS.P90, t.BwrapMS.P99, t.BwrapMS.Max)
	}
	if len(r.Policy) > 0 {
		fmt.Fprintf(&b, "### e: policy, one decision (Go benchmarks in policy/bench_test.go, median of %d)\n\n", r.Policy[0].Runs)
		fmt.Fprintf(&b, "| benchmark | ns/decision | B/op | allocs/op |\n|---|---:|---:|---:|\n")
		for _, p := range r.Policy {
			fmt.Fprintf(&b, "| %s | **%.0f** | %.0f | %.0f |\n", strings.TrimPrefix(p.Name, "Benchmark"), p.NsPerOp, p.BPerOp, p.AllocsOp)
		}
		b.WriteString("\n")
	}
	if len(r.Supervisor) > 0 {
		fmt.Fprintf(&b, "### supervisor internals (Go benchmarks in supervisor/bench_linux_test.go)\n\n")
		fmt.Fprintf(&b, "| benchmark | µs/op | B/op | allocs/op |\n|---|---:|---:|---:|\n")
		for _, p := range r.Supervisor {
			fmt.Fprintf(&b, "| %s | %.2f | %.0f | %.0f |\n", strings.TrimPrefix(p.Name, "Benchmark"), p.NsPerOp/1000, p.BPerOp, p.AllocsOp)
		}
		b.WriteString("\n")
	}
	printSessions(&b, r.Sessions)
	printNetwork(&b, r.Network)
	fmt.Fprintf(&b, "### bars (issue 7, item 3)\n\n| bar | this run | target | status |\n|---|---|---|---|\n")
	for _, x := range r.Bars {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", x.Name, x.Value, x.Target, x.Status)
	}
	if r.Flags != "" {
		fmt.Fprintf(&b, "\nbwrap baseline flags: %s\n", r.Flags)
	}
	_, _ = w.Write(b.Bytes())
}

// printSessions writes section f.
func printSessions(b *bytes.Buffer, f *sessionsResult) {
	fmt.Fprintf(b, "### f: sessions (package sandbox in the harness's own process)\n\n")
	if f == nil || (f.Exec == nil && f.Idle == nil && f.Kill == nil) {
		status := "not measured in this run"
		if f != nil && f.Status != "" {
			status = f.Status
		}
		fmt.Fprintf(b, "| measurement | status |\n|---|---|\n| sessions | %s |\n\n", status)
		return
	}
	if e := f.Exec; e != nil {
		fmt.Fprintf(b, "Round trip of `/bin/true` run to completion, as the caller sees it: %d rounds of %d each, variants alternating; ratios are medians of per-round ratios (IQR).\n\n", e.Rounds, e.OpsPerRound)
		fmt.Fprintf(b, "| variant | median ms | p90 ms | min ms | vs direct | vs library |\n|---|---:|---:|---:|---:|---:|\n")
		labels := []struct{ name, label string }{
			{rtDirect, "direct: fork+exec of /bin/true on the host (os/exec)"},
			{rtLibrary, "library: `Session.Exec` in an existing session"},
			{rtThrowaway, "library, throwaway sandbox: `Manager.Exec` without a session"},
			{rtOneShot, "one-shot: `cordon -- /bin/true` (a child process)"},
		}
		cell := func(a, base string) string {
			if a == base {
				return "1"
			}
			x := e.ratio(a + "/" + base)
			if x == nil {
				return ""
			}
			return fmt.Sprintf("**%.2f** (%.2f-%.2f)", x.Median, x.Q1, x.Q3)
		}
		for _, l := range labels {
			v := e.variant(l.name)
			if v == nil {
				continue
			}
			lib := cell(l.name, rtLibrary)
			if l.name == rtDirect {
				if x := e.ratio(rtLibrary + "/" + rtDirect); x != nil && x.Median > 0 {
					lib = fmt.Sprintf("%.2f", 1/x.Median)
				}
			}
			fmt.Fprintf(b, "| %s | **%.2f** | %.2f | %.2f | %s | %s |\n", l.label, v.MS.Median, v.MS.P90, v.MS.Min, cell(l.name, rtDirect), lib)
		}
		fmt.Fprintf(b, "| daemon: POST /v1/exec through the Go client | %s | | | | |\n\n", f.Daemon)
	} else {
		fmt.Fprintf(b, "| daemon: POST /v1/exec through the Go client | %s |\n|---|---|\n\n", f.Daemon)
	}
	if d := f.Idle; d != nil {
		fmt.Fprintf(b, "Idle sessions: %d held at once, %d run(s), median over runs; KiB per session.\n\n", d.Sessions, d.Runs)
		fmt.Fprintf(b, "| state | | RSS KiB | PSS KiB | private KiB |\n|---|---|---:|---:|---:|\n")
		for _, st := range d.States {
			fmt.Fprintf(b, "| %s | **host side**: VmRSS growth of the process using the library, after GC (Go heap %.0f, goroutine stacks %.0f KiB; %.1f OS threads, %.1f goroutines, %.1f descriptors per session) | **%.0f** | %.0f | |\n",
				st.Name, st.HeapKiB.Median, st.StackKiB.Median, st.Threads.Median, st.Goroutines.Median, st.OpenFDs.Median, st.HostRSSKiB.Median, st.HostPSSKiB.Median)
			for _, x := range st.Sandbox {
				name := "sandbox: " + x.Role
				if x.Role == roleTotal {
					name = fmt.Sprintf("**sandbox total** (%.0f processes per session)", st.ProcsPerSession)
				}
				fmt.Fprintf(b, "| | %s | %.0f | %.0f | %.0f |\n", name, x.RSSKiB.Median, x.PSSKiB.Median, x.PrivKiB.Median)
			}
			if t := st.role(roleTotal); t != nil {
				fmt.Fprintf(b, "| | host side + sandbox | | **%.0f** (%.2f MiB) | |\n", st.HostPSSKiB.Median+t.PSSKiB.Median, (st.HostPSSKiB.Median+t.PSSKiB.Median)/1024)
			}
		}
		if len(d.States) > 0 && len(d.States[0].HostRSSRuns) > 1 {
			for _, st := range d.States {
				var runs []string
				for _, x := range st.HostRSSRuns {
					runs = append(runs, fmt.Sprintf("%.0f", x))
				}
				fmt.Fprintf(b, "\nHost-side VmRSS growth per session in each run, %s: %s KiB.", st.Name, strings.Join(runs, ", "))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if k := f.Kill; k != nil {
		fmt.Fprintf(b, "Kill a tree of %d processes (%d shells in nested subshells, the rest `sleep`), %d run(s) each way, in shuffled order; ms from the start of the kill, median (min-max):\n\n", k.Tree, k.Tree/50, k.Runs)
		fmt.Fprintf(b, "| | first member exited | **last member exited: zero survivors** | monitor (shim) exited: all reaped | kill returned |\n|---|---:|---:|---:|---:|\n")
		row := func(name string, t killTimes) {
			c := func(d dist) string { return fmt.Sprintf("%.1f (%.1f-%.1f)", d.Median, d.Min, d.Max) }
			fmt.Fprintf(b, "| %s | %s | **%s** | %s | %s |\n", name, c(t.FirstExitMS), c(t.LastExitMS), c(t.ShimExitMS), c(t.ReturnMS))
		}
		row(fmt.Sprintf("`Process.Kill(%.0fs)`: walk the tree, SIGTERM+SIGCONT", k.Grace/1000), k.Library)
		row("reference: SIGTERM+SIGCONT through pidfds opened beforehand, no walk", k.Direct)
		if k.Proposal != nil {
			row("proposal: the library's walk listing children without `filepath.Glob`, then SIGTERM+SIGCONT", *k.Proposal)
		}
		if k.Direct.LastExitMS.Median > 0 && k.Direct.ShimExitMS.Median > 0 {
			fmt.Fprintf(b, "| **ratio**, library / reference (of the medians) | | **%.2f** | %.2f | |\n", k.Library.LastExitMS.Median/k.Direct.LastExitMS.Median, k.Library.ShimExitMS.Median/k.Direct.ShimExitMS.Median)
		}
		if p := k.Proposal; p != nil && p.LastExitMS.Median > 0 && p.ShimExitMS.Median > 0 {
			fmt.Fprintf(b, "| ratio, library / proposal | | %.2f | %.2f | |\n", k.Library.LastExitMS.Median/p.LastExitMS.Median, k.Library.ShimExitMS.Median/p.ShimExitMS.Median)
		}
		fmt.Fprintf(b, "\nExits seen through a pidfd per member and one for the shim, taken before the kill; for the reference, \"kill returned\" is when the last signal was sent. Building the tree (from `Start` until all %d exist): median %.0f ms. Survivors in /proc after `Kill` returned: %d (most in any run); runs that needed SIGKILL after the grace: %d.\n\n",
			k.Tree, k.BuildMS.Median, k.Survivors, k.Escalated)
	}
}
