// Command cordon-bench measures what cordon costs, side by side with the same
// work done bare and in bubblewrap without a supervisor, and reports ratios:
// per-exec wall and CPU, startup, teardown, concurrency, policy decisions.
// Every comparison alternates its variants round by round and takes medians,
// because the machines it runs on are shared and noisy: absolute times are
// context, ratios within one run are the result.
//
// It writes a table to stdout, results.json and overhead.svg to -out. It
// fails only when the harness itself breaks (a command that does not run,
// output it cannot parse), never because a figure misses its bar.
//
//	make bench        # full counts, several minutes
//	make bench-quick  # small counts, under a minute
//
// Hidden entry points: "cordon-bench __stamp" prints CLOCK_MONOTONIC in
// nanoseconds and exits; it is the last act of the command whose teardown is
// measured. runner.InitArg runs cordon's init, as in every program that uses
// package sandbox (the sessions section sets cordon's own binary as the init,
// but the library's default is this executable).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/runner"
	"golang.org/x/sys/unix"
)

const stampArg = "__stamp"

// config holds the counts of one run; quick and full differ only here.
type config struct {
	Quick bool `json:"quick"`
	// Execs is the number of /bin/true execs per per-exec run (P=1), and
	// the total per run, split over the loops, at higher concurrency.
	Execs       int   `json:"execs"`
	Rounds      int   `json:"rounds"`
	Parallel    []int `json:"parallel"`
	StrictAtP   bool  `json:"strict_at_parallel"` // also run --verify strict at P>1
	StartupRuns int   `json:"startup_runs"`
	// LatencyExecs is the number of execs of /bin/true whose decision
	// latency is read from the audit log; FirstSeen the number of programs
	// the supervisor has not seen before (copies of /bin/true).
	LatencyExecs int `json:"latency_execs"`
	FirstSeen    int `json:"first_seen"`
	Teardowns    int `json:"teardown_runs"`
	// BenchTime and BenchCount are go test's -benchtime and -count.
	BenchTime  string `json:"benchtime"`
	BenchCount int    `json:"benchcount"`
	Supervisor bool   `json:"supervisor_benchmarks"`
	Hyperfine  bool   `json:"hyperfine"`
	// Section f: /bin/true runs per variant per round (Rounds rounds);
	// idle sessions held at once, and how many times; processes in the
	// tree that is killed, and how many times.
	SessionExecOps int `json:"session_exec_ops"`
	IdleSessions   int `json:"idle_sessions"`
	IdleRuns       int `json:"idle_runs"`
	KillTree       int `json:"kill_tree"`
	KillRuns       int `json:"kill_runs"`
}

var (
	fullConfig = config{Execs: 1000, Rounds: 11, Parallel: []int{1, 2, 8, 32}, StrictAtP: true,
		StartupRuns: 40, LatencyExecs: 1000, FirstSeen: 200, Teardowns: 100, BenchTime: "500ms", BenchCount: 5, Supervisor: true, Hyperfine: true,
		SessionExecOps: 20, IdleSessions: 50, IdleRuns: 3, KillTree: 500, KillRuns: 5}
	quickConfig = config{Quick: true, Execs: 200, Rounds: 5, Parallel: []int{1, 2, 8, 32},
		StartupRuns: 15, LatencyExecs: 300, FirstSeen: 50, Teardowns: 25, BenchTime: "100ms", BenchCount: 1,
		SessionExecOps: 6, IdleSessions: 10, IdleRuns: 1, KillTree: 500, KillRuns: 1}
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case runner.InitArg:
			os.Exit(runner.InitMain())
		case stampArg:
			os.Exit(stamp())
		}
	}
	os.Exit(run())
}

// stamp prints the monotonic clock. CLOCK_MONOTONIC is the same in every pid
// namespace, so the harness can subtract it from its own reading.
func stamp() int {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 1
	}
	fmt.Println(ts.Nano())
	return 0
}

// compareFlag collects -compare NAME=BINARY: more cordon binaries to run in
// the same alternation as bin/cordon (a patched build, say).
type compareFlag []variantBinary

type variantBinary struct{ name, path string }

func (c *compareFlag) String() string { return fmt.Sprint(*c) }

func (c *compareFlag) Set(s string) error {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want NAME=BINARY, got %q", s)
	}
	*c = append(*c, variantBinary{name, path})
	return nil
}

func run() int {
	quick := flag.Bool("quick", false, "small counts: under a minute")
	cordonPath := flag.String("cordon", "bin/cordon", "the cordon binary to measure")
	outDir := flag.String("out", "bench", "directory for results.json and overhead.svg")
	goTool := flag.String("go", "go", "the go command (runs the policy and supervisor benchmarks)")
	execs := flag.Int("execs", 0, "override the number of execs per run")
	rounds := flag.Int("rounds", 0, "override the number of rounds")
	parallel := flag.String("parallel", "", "override the concurrency levels, e.g. 2,8")
	only := flag.String("only", "", "comma-separated sections to run (exec,parallel,startup,latency,teardown,policy,supervisor,sessions,network); empty: all")
	floorSrc := flag.String("floor-src", "bench/floor/floor.c", "the C floor supervisor's source, compiled with cc")
	render := flag.String("render", "", "print the table and redraw overhead.svg from an earlier results.json, without measuring")
	var compare compareFlag
	flag.Var(&compare, "compare", "NAME=BINARY: another cordon build to measure alongside (repeatable)")
	flag.Parse()

	if *render != "" {
		return rerender(*render)
	}
	cfg := fullConfig
	if *quick {
		cfg = quickConfig
	}
	if *execs > 0 {
		cfg.Execs = *execs
	}
	if *rounds > 0 {
		cfg.Rounds = *rounds
	}
	if *parallel != "" {
		cfg.Parallel = nil
		for _, f := range strings.Split(*parallel, ",") {
			p, err := strconv.Atoi(f)
			if err != nil || p < 1 {
				fmt.Fprintf(os.Stderr, "cordon-bench: -parallel: bad level %q\n", f)
				return 2
			}
			cfg.Parallel = append(cfg.Parallel, p)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()

	h, err := newHarness(ctx, cfg, *cordonPath, *goTool, *floorSrc, compare)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cordon-bench:", err)
		return 2
	}
	defer h.close()
	sections := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s != "" {
			sections[s] = true
		}
	}
	want := func(s string) bool { return len(sections) == 0 || sections[s] }

	res := &results{Config: cfg, Machine: machineInfo(h), Started: time.Now().UTC(),
		CPUMethod: h.cpu.Method(), Flags: h.flagsNote}
	steps := []struct {
		name string
		fn   func(*results) error
	}{
		{"exec", h.perExec},
		{"parallel", h.parallel},
		{"startup", h.startup},
		{"latency", h.latency},
		{"teardown", h.teardown},
		{"policy", h.policyBench},
		{"supervisor", h.supervisorBench},
		{"sessions", h.sessions},
		{"network", h.network},
	}
	for _, s := range steps {
		if !want(s.name) || (s.name == "supervisor" && !cfg.Supervisor) {
			continue
		}
		t0 := time.Now()
		if err := s.fn(res); err != nil {
			fmt.Fprintf(os.Stderr, "cordon-bench: %s: %v\n", s.name, err)
			return 2
		}
		h.logf("%s: done in %.1fs", s.name, time.Since(t0).Seconds())
	}
	res.Finished = time.Now().UTC()
	res.Machine.LoadAfter = loadavg()
	res.Bars = evaluateBars(res)

	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "cordon-bench:", err)
		return 2
	}
	printTable(os.Stdout, res)
	jsonPath := filepath.Join(*outDir, "results.json")
	svgPath := filepath.Join(*outDir, "overhead.svg")
	if err := writeJSON(jsonPath, res); err != nil {
		fmt.Fprintln(os.Stderr, "cordon-bench:", err)
		return 2
	}
	if err := os.WriteFile(svgPath, []byte(overheadSVG(res)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cordon-bench:", err)
		return 2
	}
	fmt.Printf("\nwrote %s and %s\n", jsonPath, svgPath)
	if errors.Is(ctx.Err(), context.Canceled) {
		return 130
	}
	return 0
}

// rerender prints the table of an earlier run and redraws its plot next to
// its results.json.
func rerender(path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cordon-bench:", err)
		return 2
	}
	var res results
	if err := json.Unmarshal(raw, &res); err != nil {
		fmt.Fprintf(os.Stderr, "cordon-bench: %s: %v\n", path, err)
		return 2
	}
	printTable(os.Stdout, &res)
	svgPath := filepath.Join(filepath.Dir(path), "overhead.svg")
	if err := os.WriteFile(svgPath, []byte(overheadSVG(&res)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cordon-bench:", err)
		return 2
	}
	fmt.Printf("\nwrote %s\n", svgPath)
	return 0
}
