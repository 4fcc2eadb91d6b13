// Package testcap holds the capability gates every cordon test package uses:
// a test whose capability this host lacks (bubblewrap, seccomp notify,
// ptrace, a tool) is skipped with the reason, except under CI=true, where a
// missing capability is a failure, so CI can never pass by skipping. Each
// capability has one gate here (RequireSeccompNotify, RequireBwrap,
// RequirePtrace), so every package asks the same question of the host. It
// is imported by tests only.
package testcap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// SkipOrFail skips t with the reason, or fails it when CI=true.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and a required capability is missing: "+format, args...)
	}
	t.Skipf(format, args...)
}

// RequireSeccompNotify skips unless the kernel offers what cordon's filter
// uses: SECCOMP_RET_USER_NOTIF, USER_NOTIF_FLAG_CONTINUE (5.5) and
// SECCOMP_FILTER_FLAG_TSYNC_ESRCH (5.7).
func RequireSeccompNotify(t testing.TB) {
	t.Helper()
	avail, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil {
		SkipOrFail(t, "seccomp unavailable: %v", err)
	}
	if !strings.Contains(" "+strings.TrimSpace(string(avail))+" ", " user_notif ") {
		SkipOrFail(t, "seccomp user notification unavailable (actions_avail: %s)", strings.TrimSpace(string(avail)))
	}
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		SkipOrFail(t, "kernel release unknown: %v", err)
	}
	release := strings.TrimSpace(string(rel))
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err != nil || major < 5 || major == 5 && minor < 7 {
		SkipOrFail(t, "kernel %s predates SECCOMP_FILTER_FLAG_TSYNC_ESRCH (5.7)", release)
	}
}

var bwrapProbe struct {
	once sync.Once
	path string
	err  string
}

// RequireBwrap skips unless bwrap is installed and can build a sandbox here
// (user namespaces may be disabled, or the test may run in a container that
// forbids them). It returns bwrap's path. bwrap is looked up on PATH as
// bwrap.Find does (package bwrap's own tests use this gate, so it cannot
// import bwrap).
func RequireBwrap(t testing.TB) string {
	t.Helper()
	bwrapProbe.once.Do(func() {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			bwrapProbe.err = "bubblewrap not installed (make deps): " + err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, p, "--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent", "--", "/bin/true").CombinedOutput()
		if err != nil {
			bwrapProbe.err = "bwrap cannot create a sandbox here: " + err.Error() + ": " + strings.TrimSpace(string(out))
			return
		}
		bwrapProbe.path = p
	})
	if bwrapProbe.err != "" {
		SkipOrFail(t, "%s", bwrapProbe.err)
	}
	return bwrapProbe.path
}

var ptraceProbe struct {
	once sync.Once
	err  error
}

// RequirePtrace skips unless this process may trace a child of its own
// (PTRACE_SEIZE): Yama's ptrace_scope 3, a seccomp profile or a missing
// capability can forbid it.
func RequirePtrace(t testing.TB) {
	t.Helper()
	ptraceProbe.once.Do(func() { ptraceProbe.err = seizeChild() })
	if ptraceProbe.err != nil {
		SkipOrFail(t, "ptrace not permitted here: %v", ptraceProbe.err)
	}
}
