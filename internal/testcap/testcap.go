// Package testcap holds the capability gate every cordon test package uses:
// a test whose capability this host lacks (bubblewrap, seccomp notify, a
// tool) is skipped with the reason, except under CI=true, where a missing
// capability is a failure, so CI can never pass by skipping. It is imported
// by tests only.
package testcap

import (
	"os"
	"testing"
)

// SkipOrFail skips t with the reason, or fails it when CI=true.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and a required capability is missing: "+format, args...)
	}
	t.Skipf(format, args...)
}
