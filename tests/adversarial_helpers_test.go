package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// advSrc holds the helper programs the adversarial tests build at test time.
const advSrc = "testdata/adversarial"

// buildC compiles the C file src from advSrc into dir/out with gcc and
// returns the binary's path.
func buildC(t *testing.T, dir, src, out string, flags ...string) string {
	t.Helper()
	gcc := requireTool(t, "gcc")
	srcPath, err := filepath.Abs(filepath.Join(advSrc, src))
	require.NoError(t, err)
	bin := filepath.Join(dir, out)
	args := append([]string{"-O2", "-Wall", "-pthread", "-o", bin, srcPath}, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, gcc, args...).CombinedOutput()
	require.NoError(t, err, "gcc %s: %s", src, b)
	return bin
}

// fakeBin compiles a fake program called name into dir: it prints
// "NAME ran: ARGS". Fakes with different names differ in content, so the
// supervisor's recognition of renamed copies tells them apart.
func fakeBin(t *testing.T, dir, name string) string {
	t.Helper()
	return buildC(t, dir, "fakeprog.c", name, `-DNAME="`+name+`"`)
}

// summaryRe matches the counters of a helper's summary line.
var summaryRe = regexp.MustCompile(`(\w+)=(\d+)`)

// parseSummary returns the counters of the first stdout line that starts
// with prefix ("summary mode=thread steady=0 "), failing when there is none.
func parseSummary(t *testing.T, stdout, prefix string) map[string]int {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		counts := map[string]int{}
		for _, m := range summaryRe.FindAllStringSubmatch(line, -1) {
			n, err := strconv.Atoi(m[2])
			require.NoError(t, err)
			counts[m[1]] = n
		}
		return counts
	}
	t.Fatalf("no line starting with %q in stdout:\n%s", prefix, tail(stdout, 2000))
	return nil
}

// tail returns at most the last n bytes of s, for failure messages.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// pathWith returns a PATH environment entry with dir in front.
func pathWith(dir string) string {
	return "PATH=" + dir + ":" + os.Getenv("PATH")
}

// requireNoOwnLeftovers is requireNoLeftovers restricted to the binary under
// test: bubblewrap processes of other cordon builds running on the same host
// (a developer's shell, another checkout's tests) are not this run's leak.
func requireNoOwnLeftovers(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var left []string
		for _, l := range sandboxLeftovers(t) {
			if strings.Contains(l, cordonBin) {
				left = append(left, l)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox processes left behind:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readOnlyMount reports whether path lies on a read-only mount here.
func readOnlyMount(t *testing.T, path string) bool {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(path, &st))
	return st.Flags&unix.ST_RDONLY != 0
}
