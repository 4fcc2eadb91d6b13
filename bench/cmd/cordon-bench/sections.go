package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// loopResult is one concurrency level: every variant ran the same number of
// execs in each round, in a shuffled order (roundOrder).
type loopResult struct {
	Parallel    int `json:"parallel"`
	ExecsPerRun int `json:"execs_per_run"`
	Rounds      int `json:"rounds"`
	// Variants holds per-exec figures in microseconds: wall from the
	// shell's own clock around the loops (start-up and teardown excluded),
	// CPU of the whole process tree minus that of the same command with no
	// execs, divided by the number of execs.
	Variants []*variantStats `json:"variants"`
	Ratios   []*ratio        `json:"ratios"`
}

type variantStats struct {
	Name          string    `json:"name"`
	WallUSPerExec dist      `json:"wall_us_per_exec"`
	CPUUSPerExec  dist      `json:"cpu_us_per_exec"`
	wall, cpu     []float64 // per round, in round order
}

// ratio is A/B computed in each round from that round's runs, so a burst of
// load on the machine moves both sides; Median is the reported figure.
type ratio struct {
	Name   string    `json:"name"`
	Metric string    `json:"metric"` // wall or cpu
	A, B   string    `json:"-"`
	Median float64   `json:"median"`
	Q1     float64   `json:"q1"` // the interquartile range over rounds
	Q3     float64   `json:"q3"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Rounds []float64 `json:"rounds"`
}

// ratioPairs are the comparisons reported at each concurrency level, when
// both variants ran.
var ratioPairs = [][2]string{
	{"cordon", "bwrap"},
	{"cordon", "bare"},
	{"bwrap", "bare"},
	{"cordon-strict", "bwrap"},
	{"cordon", "cordon-strict"},
	{"floor", "bwrap"},
	{"floor", "bare"},
	{"cordon", "floor"},
	{"cordon-strict", "floor"},
}

func (h *harness) perExec(res *results) error {
	vs := []variant{h.bare, h.bw}
	if h.floorV != nil {
		vs = append(vs, *h.floorV)
	}
	vs = append(append(vs, h.cordonV, h.strict), h.compare...)
	r, err := h.loops(vs, 1, h.cfg.Execs)
	if err != nil {
		return err
	}
	res.PerExec = r
	return nil
}

func (h *harness) parallel(res *results) error {
	for _, p := range h.cfg.Parallel {
		if p == 1 && res.PerExec != nil {
			continue // measured by perExec, with bare too
		}
		vs := []variant{h.bw}
		if h.floorV != nil {
			vs = append(vs, *h.floorV)
		}
		vs = append(vs, h.cordonV)
		if h.cfg.StrictAtP {
			vs = append(vs, h.strict)
		}
		vs = append(vs, h.compare...)
		r, err := h.loops(vs, p, h.cfg.Execs)
		if err != nil {
			return err
		}
		res.Parallel = append(res.Parallel, r)
	}
	return nil
}

// loops measures total execs split over p parallel loops for every variant,
// cfg.Rounds times, alternating.
func (h *harness) loops(vs []variant, p, total int) (*loopResult, error) {
	perLoop := max(total/p, 1)
	execs := perLoop * p
	r := &loopResult{Parallel: p, ExecsPerRun: execs, Rounds: h.cfg.Rounds}
	stats := map[string]*variantStats{}
	for _, v := range vs {
		st := &variantStats{Name: v.Name}
		stats[v.Name] = st
		r.Variants = append(r.Variants, st)
		// Warm-up: page cache, the supervisor's lookups, bash's hash.
		if _, err := h.loop(v, min(perLoop, 20), p); err != nil {
			return nil, err
		}
	}
	for round := 0; round < h.cfg.Rounds; round++ {
		for _, j := range roundOrder(len(vs), round) {
			v := vs[j]
			full, err := h.loop(v, perLoop, p)
			if err != nil {
				return nil, err
			}
			empty, err := h.loop(v, 0, p)
			if err != nil {
				return nil, err
			}
			st := stats[v.Name]
			st.wall = append(st.wall, us(full.Inner)/float64(execs))
			st.cpu = append(st.cpu, us(full.CPU-empty.CPU)/float64(execs))
		}
		h.logf("P=%d round %d/%d: %s", p, round+1, h.cfg.Rounds, roundLine(r.Variants))
	}
	for _, st := range r.Variants {
		st.WallUSPerExec = summarize(st.wall)
		st.CPUUSPerExec = summarize(st.cpu)
	}
	pairs := append([][2]string{}, ratioPairs...)
	for _, c := range h.compare {
		pairs = append(pairs, [2]string{c.Name, "bwrap"}, [2]string{c.Name, "cordon"}, [2]string{c.Name, "floor"})
	}
	for _, pr := range pairs {
		a, b := stats[pr[0]], stats[pr[1]]
		if a == nil || b == nil {
			continue
		}
		r.Ratios = append(r.Ratios, newRatio(pr[0], pr[1], "wall", a.wall, b.wall), newRatio(pr[0], pr[1], "cpu", a.cpu, b.cpu))
	}
	return r, nil
}

func roundLine(vs []*variantStats) string {
	var parts []string
	for _, v := range vs {
		if n := len(v.wall); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f/%.0fµs", v.Name, v.wall[n-1], v.cpu[n-1]))
		}
	}
	return strings.Join(parts, ", ") + " (wall/CPU per exec)"
}

func newRatio(a, b, metric string, as, bs []float64) *ratio {
	r := &ratio{Name: a + "/" + b, Metric: metric, A: a, B: b}
	for i := range as {
		if i < len(bs) && bs[i] > 0 {
			r.Rounds = append(r.Rounds, as[i]/bs[i])
		}
	}
	d := summarize(r.Rounds)
	r.Median, r.Q1, r.Q3, r.Min, r.Max = d.Median, d.Q1, d.Q3, d.Min, d.Max
	return r
}

func (r *loopResult) ratio(name, metric string) *ratio {
	if r == nil {
		return nil
	}
	for _, x := range r.Ratios {
		if x.Name == name && x.Metric == metric {
			return x
		}
	}
	return nil
}

// startupResult compares `cordon -- /bin/true` with bwrap running /bin/true
// directly, with the same flags, and with the C floor supervisor in that
// sandbox; wall from start to exit, in milliseconds.
type startupResult struct {
	Runs      int     `json:"runs"`
	CordonMS  dist    `json:"cordon_ms"`
	BwrapMS   dist    `json:"bwrap_ms"`
	Ratio     float64 `json:"ratio"`        // of the medians
	PairRatio dist    `json:"paired_ratio"` // cordon/bwrap of each alternating round
	// Variants holds every variant, bwrap and cordon included: the floor
	// and -compare builds, each with its ratio to bwrap in the same round.
	Variants  []*startupVariant `json:"variants,omitempty"`
	Hyperfine *struct {
		CordonMS float64 `json:"cordon_median_ms"`
		BwrapMS  float64 `json:"bwrap_median_ms"`
		Ratio    float64 `json:"ratio"`
	} `json:"hyperfine,omitempty"`
}

type startupVariant struct {
	Name    string    `json:"name"`
	MS      dist      `json:"ms"`
	VsBwrap dist      `json:"vs_bwrap"` // per-round ratio to bwrap
	ms      []float64 // per round
}

func (s *startupResult) variant(name string) *startupVariant {
	for _, v := range s.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

func (h *harness) startup(res *results) error {
	vs := []variant{h.bw}
	if h.floorV != nil {
		vs = append(vs, *h.floorV)
	}
	vs = append(append(vs, h.cordonV), h.compare...)
	timeRun := func(argv []string) (float64, error) {
		cmd := exec.CommandContext(h.ctx, argv[0], argv[1:]...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%v: %v: %s", argv, err, stderr.String())
		}
		return ms(time.Since(t0)), nil
	}
	s := &startupResult{Runs: h.cfg.StartupRuns}
	argvs := make([][]string, len(vs))
	for i, v := range vs {
		argvs[i] = h.argv(v, []string{"/bin/true"})
		s.Variants = append(s.Variants, &startupVariant{Name: v.Name})
		for range 3 { // warm-up
			if _, err := timeRun(argvs[i]); err != nil {
				return err
			}
		}
	}
	// Each round runs every variant once, in an order shuffled from round
	// to round (roundOrder), so a burst of load on the machine falls on all
	// of them, and no variant always follows the same one.
	for round := 0; round < h.cfg.StartupRuns; round++ {
		for _, j := range roundOrder(len(vs), round) {
			t, err := timeRun(argvs[j])
			if err != nil {
				return err
			}
			s.Variants[j].ms = append(s.Variants[j].ms, t)
		}
	}
	bw := s.Variants[0].ms
	for _, v := range s.Variants {
		v.MS = summarize(v.ms)
		var r []float64
		for i := range v.ms {
			r = append(r, v.ms[i]/bw[i])
		}
		v.VsBwrap = summarize(r)
	}
	c := s.variant("cordon")
	s.CordonMS, s.BwrapMS, s.PairRatio = c.MS, s.Variants[0].MS, c.VsBwrap
	s.Ratio = s.CordonMS.Median / s.BwrapMS.Median
	if h.cfg.Hyperfine {
		if hf, err := h.hyperfine(h.argv(h.cordonV, []string{"/bin/true"}), argvs[0]); err != nil {
			h.logf("hyperfine cross-check skipped: %v", err)
		} else {
			s.Hyperfine = hf
		}
	}
	res.Startup = s
	return nil
}

// hyperfine cross-checks startup with Debian's hyperfine (no shell, warm-up
// runs). It runs each command's batch in turn, not alternating, so the
// harness's own paired figure is the one the bar is judged on.
func (h *harness) hyperfine(a, b []string) (*struct {
	CordonMS float64 `json:"cordon_median_ms"`
	BwrapMS  float64 `json:"bwrap_median_ms"`
	Ratio    float64 `json:"ratio"`
}, error) {
	hf, err := exec.LookPath("hyperfine")
	if err != nil {
		return nil, fmt.Errorf("hyperfine not installed (make bench installs it with apt-get)")
	}
	out := filepath.Join(h.tmp, "hyperfine.json")
	cmd := exec.CommandContext(h.ctx, hf, "-N", "--style", "none", "--warmup", "3",
		"--runs", strconv.Itoa(h.cfg.StartupRuns), "--export-json", out, shellJoin(a), shellJoin(b))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Results []struct {
			Median float64 `json:"median"`
		} `json:"results"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Results) != 2 {
		return nil, fmt.Errorf("unexpected hyperfine output: %v", err)
	}
	r := &struct {
		CordonMS float64 `json:"cordon_median_ms"`
		BwrapMS  float64 `json:"bwrap_median_ms"`
		Ratio    float64 `json:"ratio"`
	}{CordonMS: doc.Results[0].Median * 1e3, BwrapMS: doc.Results[1].Median * 1e3}
	r.Ratio = r.CordonMS / r.BwrapMS
	return r, nil
}

func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, w := range argv {
		if w != "" && !strings.ContainsAny(w, " \t\n'\"\\$`*?[]{}();&|<>#~") {
			out[i] = w
		} else {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// teardownResult is the time from the command's last act (it prints
// CLOCK_MONOTONIC and exits) to its runner's exit as the harness sees it,
// in milliseconds.
type teardownResult struct {
	Runs     int  `json:"runs"`
	CordonMS dist `json:"cordon_ms"`
	BwrapMS  dist `json:"bwrap_ms"`
	// Compare holds the -compare builds, measured in the same alternation.
	Compare map[string]dist `json:"compare,omitempty"`
}

func (h *harness) teardown(res *results) error {
	self, err := harnessBinary()
	if err != nil {
		return err
	}
	cmd := []string{self, stampArg}
	one := func(argv []string) (float64, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return 0, err
		}
		defer r.Close()
		c := exec.CommandContext(h.ctx, argv[0], argv[1:]...)
		var stderr bytes.Buffer
		c.Stdout, c.Stderr = w, &stderr
		err = c.Run()
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		w.Close()
		if err != nil {
			return 0, fmt.Errorf("%v: %v: %s", argv, err, stderr.String())
		}
		var buf [64]byte
		n, _ := r.Read(buf[:])
		stamp, err := strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%v: bad stamp %q", argv, buf[:n])
		}
		return float64(ts.Nano()-stamp) / 1e6, nil
	}
	ca, ba := h.argv(h.cordonV, cmd), h.argv(h.bw, cmd)
	if _, err := one(ca); err != nil { // warm-up, and a check that it works
		return err
	}
	var c, b []float64
	others := make([][]float64, len(h.compare))
	for i := 0; i < h.cfg.Teardowns; i++ {
		tc, err := one(ca)
		if err != nil {
			return err
		}
		tb, err := one(ba)
		if err != nil {
			return err
		}
		c, b = append(c, tc), append(b, tb)
		for j, v := range h.compare {
			t, err := one(h.argv(v, cmd))
			if err != nil {
				return err
			}
			others[j] = append(others[j], t)
		}
	}
	res.Teardown = &teardownResult{Runs: h.cfg.Teardowns, CordonMS: summarize(c), BwrapMS: summarize(b)}
	for j, v := range h.compare {
		if res.Teardown.Compare == nil {
			res.Teardown.Compare = map[string]dist{}
		}
		res.Teardown.Compare[v.Name] = summarize(others[j])
	}
	return nil
}

// benchResult is one Go benchmark: the median over -count runs.
type benchResult struct {
	Name     string  `json:"name"`
	NsPerOp  float64 `json:"ns_per_op"`
	BPerOp   float64 `json:"bytes_per_op,omitempty"`
	AllocsOp float64 `json:"allocs_per_op,omitempty"`
	Runs     int     `json:"runs"`
}

func (h *harness) policyBench(res *results) error {
	r, err := h.goBench("./policy", `^(BenchmarkDecide|BenchmarkDecideOneProgram|BenchmarkDecideFiles)$`)
	res.Policy = r
	return err
}

func (h *harness) supervisorBench(res *results) error {
	r, err := h.goBench("./supervisor", `.`)
	res.Supervisor = r
	return err
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op(?:\s+([0-9.]+) B/op\s+([0-9.]+) allocs/op)?`)

func (h *harness) goBench(pkg, pattern string, env ...string) ([]benchResult, error) {
	cmd := exec.CommandContext(h.ctx, h.goTool, "test", "-run", "^$", "-bench", pattern,
		"-benchtime", h.cfg.BenchTime, "-count", strconv.Itoa(h.cfg.BenchCount), pkg)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench %s: %v\n%s", pkg, err, tail(out.String(), 3000))
	}
	type acc struct{ ns, b, allocs []float64 }
	got := map[string]*acc{}
	var order []string
	for _, line := range strings.Split(out.String(), "\n") {
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := got[m[1]]
		if a == nil {
			a = &acc{}
			got[m[1]] = a
			order = append(order, m[1])
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		a.ns = append(a.ns, ns)
		if m[3] != "" {
			b, _ := strconv.ParseFloat(m[3], 64)
			al, _ := strconv.ParseFloat(m[4], 64)
			a.b, a.allocs = append(a.b, b), append(a.allocs, al)
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("go test -bench %s: no benchmark lines in:\n%s", pkg, tail(out.String(), 3000))
	}
	var rs []benchResult
	for _, name := range order {
		a := got[name]
		rs = append(rs, benchResult{Name: name, NsPerOp: median(a.ns), BPerOp: median(a.b), AllocsOp: median(a.allocs), Runs: len(a.ns)})
	}
	return rs, nil
}

// dist summarizes samples.
type dist struct {
	Median float64 `json:"median"`
	Q1     float64 `json:"q1"`
	Q3     float64 `json:"q3"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func summarize(xs []float64) dist {
	if len(xs) == 0 {
		return dist{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return dist{Median: median(s), Q1: quantile(s, 0.25), Q3: quantile(s, 0.75), P90: quantile(s, 0.90), P99: quantile(s, 0.99), Min: s[0], Max: s[len(s)-1], N: len(s)}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// quantile is the nearest-rank quantile of sorted s.
func quantile(s []float64, q float64) float64 {
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
