package main

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
	"time"
)

// cpuAcct measures the CPU of a whole process tree with a cgroup: every
// measured command runs in a fresh one, so what bwrap's monitor never reaps
// (the sandbox's pid 1 and everything below it) and cordon's host process
// are all counted. cgroup v1 (cpuacct) and v2 (cpu.stat) are supported.
type cpuAcct struct {
	base string // where groups are created
	v2   bool
	n    int
}

// Method names how CPU was measured, for the report.
func (c *cpuAcct) Method() string {
	if c == nil {
		return "rusage of the harness's children + bash `times` inside the sandbox (no writable cgroup)"
	}
	if c.v2 {
		return "cgroup v2 cpu.stat usage_usec of a fresh cgroup per run (whole tree)"
	}
	return "cgroup v1 cpuacct.usage of a fresh cgroup per run (whole tree)"
}

// detectCPUAcct finds a cgroup the harness may create children in and move a
// process into, and proves it with a trivial command; nil when there is none.
func detectCPUAcct(ctx context.Context) *cpuAcct {
	own := ownCgroups()
	var cands []*cpuAcct
	for _, mnt := range []string{"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct"} {
		if _, err := os.Stat(filepath.Join(mnt, "cpuacct.usage")); err == nil {
			cands = append(cands, &cpuAcct{base: filepath.Join(mnt, own["cpuacct"])})
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cands = append(cands, &cpuAcct{base: filepath.Join("/sys/fs/cgroup", own[""]), v2: true})
	}
	for _, c := range cands {
		g, err := c.newGroup()
		if err != nil {
			continue
		}
		err = exec.CommandContext(ctx, g.wrap([]string{"/bin/true"})[0], g.wrap([]string{"/bin/true"})[1:]...).Run()
		if err == nil {
			_, err = g.usage()
		}
		g.remove()
		if err == nil {
			return c
		}
	}
	return nil
}

// ownCgroups maps controller lists ("cpuacct", "" for v2) to this process's
// cgroup paths, from /proc/self/cgroup.
func ownCgroups() map[string]string {
	out := map[string]string{}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			out[ctl] = parts[2]
		}
	}
	return out
}

type cgroup struct {
	dir string
	v2  bool
}

func (c *cpuAcct) newGroup() (*cgroup, error) {
	c.n++
	dir := filepath.Join(c.base, fmt.Sprintf("cordon-bench-%d-%d", os.Getpid(), c.n))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	return &cgroup{dir: dir, v2: c.v2}, nil
}

// wrap makes argv join the group before it starts: a shell moves itself in,
// then execs argv, so every descendant is born inside.
func (g *cgroup) wrap(argv []string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(g.dir, "cgroup.procs")}, argv...)
}

// usage waits until the group is empty (bwrap's pid 1 may still be dying
// when its monitor has exited), then returns its CPU time.
func (g *cgroup) usage() (time.Duration, error) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		if err != nil {
			return 0, err
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("processes left in %s after the command: %s", g.dir, strings.Fields(string(b)))
		}
		time.Sleep(time.Millisecond)
	}
	if !g.v2 {
		b, err := os.ReadFile(filepath.Join(g.dir, "cpuacct.usage"))
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(ns), err
	}
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, errors.New("no usage_usec in " + g.dir + "/cpu.stat")
}

func (g *cgroup) remove() {
	for i := 0; i < 200; i++ {
		if err := os.Remove(g.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
