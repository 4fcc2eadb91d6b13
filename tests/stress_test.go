package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHugeArgv(t *testing.T) {
	requireSeccompNotify(t)
	tests := []struct {
		name   string
		args   []string
		script string
		stdout string
		stderr string
	}{
		{"10,000 arguments allowed", nil, `/bin/echo $(seq 1 10000) | wc -w`, "10000\n", ""},
		{"10,000 arguments denied by a rule on their prefix", []string{"--deny", "echo 1 2 3"},
			`/bin/echo $(seq 1 10000) | wc -w; echo done`, "0\ndone\n", `cordon: denied: /bin/echo 1 2 3 4`},
		{"a 100 KiB argument", nil, `/bin/echo $(head -c 102400 /dev/zero | tr '\0' a) | wc -c`, "102401\n", ""},
		{"an argument over MAX_ARG_STRLEN gets E2BIG", nil,
			`/bin/echo $(head -c 200000 /dev/zero | tr '\0' a) >/dev/null; echo rc=$?`, "rc=126\n", "Argument list too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, tc.args...), "--", "bash", "-c", tc.script)
			r := cordon(t, args...)
			assert.Equal(t, tc.stdout, r.stdout, "stderr: %s", r.stderr)
			if tc.stderr != "" {
				assert.Contains(t, r.stderr, tc.stderr)
			}
			for _, l := range strings.Split(r.stderr, "\n") {
				assert.LessOrEqual(t, len(l), 600, "a denial line stays one bounded line")
			}
		})
	}
}

func TestOddEncodingsInArgv(t *testing.T) {
	requireSeccompNotify(t)
	r := cordon(t, "--deny", "echo", "--", "bash", "-c", `/bin/echo $'\xff\xfe' $'two\nlines' '' "sp ace"; echo rc=$?`)
	assert.Equal(t, "rc=126\n", r.stdout)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.NotEmpty(t, lines)
	assert.Equal(t, `cordon: denied: /bin/echo "\xff\xfe" "two\nlines" "" "sp ace" (rule: deny "echo")`, lines[0])
}

func TestExecStorm(t *testing.T) {
	requireSeccompNotify(t)
	// 32 loops at once, each with allowed and denied execs: every allowed
	// one runs, every denied one fails, nothing is lost or mixed up.
	const loops, iters = 32, 40
	script := fmt.Sprintf(`
for l in $(seq %d); do
  ( ok=0; no=0
    for i in $(seq %d); do
      /bin/true && ok=$((ok+1))
      /bin/false-denied 2>/dev/null || no=$((no+1))
    done
    echo "ok=$ok no=$no" ) &
done
wait`, loops, iters)
	dir := t.TempDir()
	writeScript(t, dir, "false-denied", "echo RAN")
	r := runCordon(t, runOpts{dir: dir, env: []string{"PATH=" + dir + ":/usr/bin:/bin"}}, "--deny", "false-denied", "--",
		"bash", "-c", strings.ReplaceAll(script, "/bin/false-denied", dir+"/false-denied"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "RAN")
	want := strings.Repeat(fmt.Sprintf("ok=%d no=%d\n", iters, iters), loops)
	assert.Equal(t, want, r.stdout)
	assert.Equal(t, loops*iters, strings.Count(r.stderr, "cordon: denied:"), "one line per denied exec")
}
