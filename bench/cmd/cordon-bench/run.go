package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/runner"
	"golang.org/x/sys/unix"
)

// runTimeout bounds one measured command: a wedged sandbox fails the harness
// instead of stalling it.
const runTimeout = 3 * time.Minute

// kind says how a variant runs its command.
type kind int

const (
	kindBare   kind = iota // directly on the host
	kindBwrap              // in bubblewrap with cordon's flags, no supervisor
	kindCordon             // under cordon
	kindFloor              // in bubblewrap with cordon's flags, under the C floor supervisor (bench/floor)
)

// variant is one way of running the same command.
type variant struct {
	Name string
	kind kind
	bin  string   // the cordon binary (kindCordon)
	args []string // extra cordon flags
}

type harness struct {
	ctx    context.Context
	cfg    config
	goTool string

	cordon string // absolute, symlinks resolved: what cordon binds into the sandbox
	bwrap  string
	cwd    string
	tmp    string
	policy string // a policy file: cordon's default policy, independent of the user's config
	floor  string // the C floor supervisor, built by buildFloor; empty: not built, its rows are left out

	bare, bw, cordonV, strict variant
	floorV                    *variant // nil when the floor could not be built
	compare                   []variant
	cpu                       *cpuAcct // nil: rusage + the shell's own times
	flagsNote                 string   // how the bwrap flags were checked against cordon's
	bwPrefix                  []string // cordon's bwrap command line up to "--" (checkFlags); nil: h.spec's
}

func newHarness(ctx context.Context, cfg config, cordonPath, goTool, floorSrc string, compare compareFlag) (*harness, error) {
	h := &harness{ctx: ctx, cfg: cfg, goTool: goTool}
	var err error
	if h.cordon, err = realPath(cordonPath); err != nil {
		return nil, fmt.Errorf("cordon binary: %w (run make build)", err)
	}
	if h.bwrap, err = bwrap.Find(); err != nil {
		return nil, err
	}
	if h.cwd, err = os.Getwd(); err != nil {
		return nil, err
	}
	if h.tmp, err = os.MkdirTemp("", "cordon-bench-"); err != nil {
		return nil, err
	}
	h.policy = filepath.Join(h.tmp, "policy.yaml")
	// The built-in default: allow, with the built-in deny list. Explicit so a
	// cordon.yaml or ~/.config/cordon/policy.yaml does not change the figures.
	if err := os.WriteFile(h.policy, []byte("version: 1\ndefault: allow\ndefaults: true\n"), 0o600); err != nil {
		return nil, err
	}
	h.bare = variant{Name: "bare", kind: kindBare}
	h.bw = variant{Name: "bwrap", kind: kindBwrap}
	h.cordonV = variant{Name: "cordon", kind: kindCordon, bin: h.cordon}
	h.strict = variant{Name: "cordon-strict", kind: kindCordon, bin: h.cordon, args: []string{"--verify", "strict"}}
	for _, c := range compare {
		p, err := realPath(c.path)
		if err != nil {
			return nil, fmt.Errorf("-compare %s: %w", c.name, err)
		}
		h.compare = append(h.compare, variant{Name: c.name, kind: kindCordon, bin: p})
	}
	if err := h.buildFloor(floorSrc); err != nil {
		h.logf("the C floor is left out: %v", err)
	} else {
		h.floorV = &variant{Name: "floor", kind: kindFloor}
	}
	// Every binary measured starts from the page cache in the same state.
	settle := []string{h.cordon}
	for _, v := range h.compare {
		settle = append(settle, v.bin)
	}
	if h.floorV != nil {
		settle = append(settle, h.floor)
	}
	for _, p := range settle {
		if err := settleCache(p); err != nil {
			return nil, err
		}
	}
	h.cpu = detectCPUAcct(ctx)
	if h.cpu == nil {
		h.logf("no writable cpu cgroup: CPU is the harness's rusage plus the sandboxed shell's own times (misses bwrap's pid 1 and cordon's init)")
	}
	h.flagsNote = h.checkFlags()
	h.logf("bwrap flags: %s", h.flagsNote)
	return h, nil
}

func (h *harness) close() { _ = os.RemoveAll(h.tmp) }

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cordon-bench: "+format+"\n", args...)
}

func realPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	a, err = filepath.EvalSymlinks(a)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(a); err != nil {
		return "", err
	} else if st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable", a)
	}
	return a, nil
}

// spec is the sandbox cordon builds for this directory (runner.launch.start
// does the same): the same flags, cordon's binary bound, only the command
// differs.
func (h *harness) spec(command []string) bwrap.Spec {
	return bwrap.Spec{Dir: h.cwd, Net: bwrap.NetHost, Exe: h.cordon, Command: command, Privileged: os.Geteuid() == 0}
}

// argv returns how v runs command.
func (h *harness) argv(v variant, command []string) []string {
	switch v.kind {
	case kindBwrap, kindFloor:
		if v.kind == kindFloor {
			// The same sandbox; the floor runs the command as its child.
			command = append([]string{h.floor}, command...)
		}
		if h.bwPrefix != nil {
			return append(append([]string(nil), h.bwPrefix...), command...)
		}
		s := h.spec(command)
		args, err := s.Args()
		if err != nil {
			panic(err) // only an empty command fails, and callers never pass one
		}
		return append([]string{h.bwrap}, args...)
	case kindCordon:
		a := append([]string{v.bin, "--policy", h.policy}, v.args...)
		return append(append(a, "--"), command...)
	}
	return command
}

// buildFloor compiles the C floor supervisor next to the harness's own
// binary: the sandbox sees the host's file system read-only but has a private
// /tmp, so the binary cannot live in h.tmp.
func (h *harness) buildFloor(src string) error {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return fmt.Errorf("no C compiler (cc) on PATH: install build-essential")
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("floor source: %w (run from the repository's root, or pass -floor-src)", err)
	}
	self, err := harnessBinary()
	if err != nil {
		return err
	}
	out := filepath.Join(filepath.Dir(self), "cordon-bench-floor")
	cmd := exec.CommandContext(h.ctx, cc, "-O2", "-Wall", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cc %s: %v\n%s", src, err, b)
	}
	h.floor = out
	return nil
}

var debugArgv = regexp.MustCompile(`msg="starting sandbox" argv=("(?:[^"\\]|\\.)*")`)

// checkFlags reads the bwrap command line cordon logs with --debug for this
// directory and policy, and makes it the bwrap baseline's (h.bwPrefix): the
// same binds, tmpfs, protections and placeholders, only the command after
// "--" differs. Without it (cordon --debug failed, or its line cannot be
// parsed) the baseline is bwrap.Spec's flags for this directory, which lack
// what the policy and git add, and the note says so.
func (h *harness) checkFlags() string {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(h.ctx, h.cordon, "--debug", "--policy", h.policy, "--", "/bin/true")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("not checked: cordon --debug failed: %v", err)
	}
	m := debugArgv.FindSubmatch(stderr.Bytes())
	if m == nil {
		return "not checked: no \"starting sandbox\" line in cordon --debug"
	}
	logged, err := strconv.Unquote(string(m[1]))
	if err != nil {
		return "not checked: " + err.Error()
	}
	words, err := splitDescribed(logged)
	if err != nil {
		return "not checked: " + err.Error()
	}
	// The command is the last two words: cordon's binary and the init arg.
	n := len(words)
	if n < 4 || words[n-3] != "--" || words[n-1] != runner.InitArg || words[0] != h.bwrap {
		return "not checked: unexpected command line " + logged
	}
	prefix := append([]string(nil), words[:n-2]...)
	// Unreadable files are covered by a placeholder that cordon makes per
	// run (in a cordon-files-* directory: /dev/shm or the temporary
	// directory) and removes after it: the baseline binds one of its own, made
	// the same way (an empty mode-000 file).
	for i, w := range prefix {
		if i > 0 && prefix[i-1] == "--ro-bind" && strings.HasPrefix(filepath.Base(filepath.Dir(w)), "cordon-files-") {
			ph := filepath.Join(h.tmp, "denied")
			if err := os.WriteFile(ph, nil, 0); err != nil && !os.IsExist(err) {
				return "not checked: " + err.Error()
			}
			prefix[i] = ph
		}
	}
	h.bwPrefix = prefix
	return "cordon's own, from cordon --debug (" + logged + ")"
}

// splitDescribed splits a command line written by bwrap.Describe: words
// separated by one space, each bare or Go-quoted.
func splitDescribed(s string) ([]string, error) {
	var out []string
	for len(s) > 0 {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("bad quoted word in %q: %w", s, err)
			}
			w, _ := strconv.Unquote(q)
			out = append(out, w)
			s = s[len(q):]
		} else {
			w, rest, _ := strings.Cut(s, " ")
			out = append(out, w)
			s = " " + rest
			if rest == "" {
				s = ""
			}
		}
		s = strings.TrimPrefix(s, " ")
	}
	return out, nil
}

// sample is one measured command.
type sample struct {
	Wall  time.Duration // from start to wait returning, as seen by the harness
	Inner time.Duration // the measured section, timed by the command itself (loops only)
	CPU   time.Duration // user+system of the whole process tree
	Out   string
}

// measure runs argv and accounts its whole tree's CPU. inner reports whether
// the command is a sandboxed shell printing its own times (the CPU fallback
// adds them).
func (h *harness) measure(argv []string, sandboxed bool) (sample, error) {
	ctx, cancel := context.WithTimeout(h.ctx, runTimeout)
	defer cancel()
	var group *cgroup
	if h.cpu != nil {
		g, err := h.cpu.newGroup()
		if err != nil {
			return sample{}, err
		}
		group = g
		defer group.remove()
		argv = group.wrap(argv)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %v\n%s", bwrap.Describe(argv), err, tail(stderr.String(), 2000))
	}
	s := sample{Wall: wall, Out: stdout.String()}
	if group != nil {
		cpu, err := group.usage()
		if err != nil {
			return sample{}, err
		}
		s.CPU = cpu
	} else {
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		s.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		if sandboxed {
			// bwrap's monitor exits when the sandbox reports its status,
			// without reaping it: the sandbox's CPU never reaches our
			// rusage. The shell's "times" adds its own and its children's.
			s.CPU += shellTimes(s.Out)
		}
	}
	return s, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// loopScript runs $1 execs of /bin/true in each of $2 parallel loops and
// prints the section's start and end (EPOCHREALTIME, microseconds) and the
// shell's times. Loops are subshells of one shell: one sandbox, one
// supervisor.
const loopScript = `n=$1 p=$2
loop() { local i; for ((i = 0; i < n; i++)); do /bin/true; done; }
s=$EPOCHREALTIME
if ((p == 1)); then loop; else
	for ((j = 0; j < p; j++)); do loop & done
	wait
fi
e=$EPOCHREALTIME
echo "section $s $e"
times`

// loop runs perLoop execs in each of p parallel loops under v.
func (h *harness) loop(v variant, perLoop, p int) (sample, error) {
	cmd := []string{"/bin/bash", "-c", loopScript, "cordon-bench", strconv.Itoa(perLoop), strconv.Itoa(p)}
	s, err := h.measure(h.argv(v, cmd), v.kind != kindBare)
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(s.Out, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "section" {
			a, err1 := parseEpoch(f[1])
			b, err2 := parseEpoch(f[2])
			if err1 != nil || err2 != nil {
				return s, fmt.Errorf("%s: bad section line %q", v.Name, line)
			}
			s.Inner = b - a
			return s, nil
		}
	}
	return s, fmt.Errorf("%s: no section line in %q", v.Name, s.Out)
}

// parseEpoch parses bash's EPOCHREALTIME (seconds.microseconds) exactly.
func parseEpoch(s string) (time.Duration, error) {
	sec, frac, _ := strings.Cut(s, ".")
	a, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, err
	}
	frac = (frac + "000000")[:6]
	b, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(a)*time.Second + time.Duration(b)*time.Microsecond, nil
}

// shellTimes sums the two lines bash's "times" prints (the shell's own
// user/system, then its children's), e.g. "0m0.004s 0m0.010s".
func shellTimes(out string) time.Duration {
	var total time.Duration
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		for _, w := range f {
			m, s, ok := strings.Cut(strings.TrimSuffix(w, "s"), "m")
			if !ok {
				continue
			}
			mins, err1 := strconv.Atoi(m)
			secs, err2 := strconv.ParseFloat(s, 64)
			if err1 == nil && err2 == nil {
				total += time.Duration(mins)*time.Minute + time.Duration(secs*float64(time.Second))
			}
		}
	}
	return total
}

// harnessBinary is the harness's own binary, which some sections run inside
// the sandbox: it must not be under /tmp, which the sandbox replaces.
func harnessBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if self, err = realPath(self); err != nil {
		return "", err
	}
	if strings.HasPrefix(self, "/tmp/") {
		return "", fmt.Errorf("the harness binary %s is under /tmp, which the sandbox does not see: build it elsewhere (make bench does)", self)
	}
	return self, nil
}

// roundOrder is the order the variants run in, in round r: a shuffle, the
// same for a given r on every run of the harness. A rotation (variant
// (i+r)%n in slot i) made each variant follow the same one in almost every
// round, and a cordon run measured 0.5-1.4 ms faster right after another
// cordon build than after bubblewrap or the floor (BENCHMARKS: "the
// harness's order"), which favoured whatever build came after the base.
func roundOrder(n, r int) []int {
	return rand.New(rand.NewPCG(0x636f72646f6e, uint64(r))).Perm(n)
}

// settleCache syncs p, drops its pages from the page cache and reads
// the file back, so that each binary measured is cached as a file read from
// disk is. A binary just written (a fresh build, a cp) started measurably
// faster than the same bytes read back: in one sitting a copy made minutes
// before ran a whole `cordon -- /bin/true` 0.6 ms sooner than the file it
// was copied from (BENCHMARKS: "the harness's order and the page cache").
func settleCache(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	_, err = io.Copy(io.Discard, f)
	return err
}
