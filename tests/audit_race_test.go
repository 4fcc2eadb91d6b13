package tests

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// auditExecs returns the exec lines of an --audit file.
func auditExecs(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "audit line %q", line)
		if rec["kind"] == "exec" {
			out = append(out, rec)
		}
	}
	return out
}

// TestAdvAuditShowsArgvThatRan: a second thread switches an exec's argv
// between two allowed values ("git status", "git push") around the check
// (a red team's, 109 of 200 runs with no audit line for what ran). The
// exec event decides what the kernel really ran again and, allowed, logs
// it with the reason "changed after check, allowed as run": every git push
// that ran has a line.
func TestAdvAuditShowsArgvThatRan(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	flip := buildC(t, dir, "flip.c", "flip")
	git := fakeBin(t, dir, "git")
	const n = 300
	audit := filepath.Join(dir, "audit.jsonl")
	r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--audit", audit, "--",
		flip, "-m", "thread", "-n", fmt.Sprint(n), "-p", git)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", tail(r.stdout, 2000), tail(r.stderr, 2000))
	counts := parseSummary(t, r.stdout, "summary mode=thread steady=0 ")
	logRace(t, "race", counts, r.stderr)
	require.Positive(t, counts["ran_denied"], "git push never ran: the race shows nothing")

	pushes, redecided := 0, 0
	for _, rec := range auditExecs(t, audit) {
		argv, _ := rec["argv"].([]any)
		if len(argv) == 2 && argv[0] == "git" && argv[1] == "push" {
			pushes++
			if rec["reason"] == "changed after check, allowed as run" {
				redecided++
			}
		}
	}
	t.Logf("git push ran %d times; %d audit lines show it, %d decided at the exec event", counts["ran_denied"], pushes, redecided)
	assert.Positive(t, redecided, "no exec switched after its check was logged as it ran")
	assert.GreaterOrEqual(t, pushes, counts["ran_denied"], "a git push ran with no audit line showing it")
}

// TestAuditKeepsBytesThatAreNotUTF8: arguments rm-\xff and rm-\xfe read
// alike in JSON (U+FFFD, a red team's); the audit line carries their exact
// bytes too.
func TestAuditKeepsBytesThatAreNotUTF8(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	r := runCordon(t, runOpts{dir: dir}, "--audit", audit, "--", "sh", "-c",
		`/usr/bin/printf '%s\n' "$(printf 'rm-\377')" "$(printf 'rm-\376')" >/dev/null`)
	require.Equal(t, 0, r.code, r.stderr)
	var got [][]string
	for _, rec := range auditExecs(t, audit) {
		if argv, _ := rec["argv"].([]any); len(argv) > 0 && argv[0] == "/usr/bin/printf" {
			b64, _ := rec["argv_b64"].([]any)
			require.Len(t, b64, len(argv), "exact bytes for every argument: %v", rec)
			var words []string
			for _, w := range b64 {
				b, err := base64.StdEncoding.DecodeString(w.(string))
				require.NoError(t, err)
				words = append(words, string(b))
			}
			got = append(got, words)
		}
	}
	assert.Equal(t, [][]string{{"/usr/bin/printf", `%s\n`, "rm-\xff", "rm-\xfe"}}, got)
}
