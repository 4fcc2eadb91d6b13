package doctor

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testHangMode is a probe mode only the test binary knows: a child that
// never answers, to prove the parent's bound.
const testHangMode = "test-hang"

// TestMain lets the test binary play the probe child, as cordon's main does.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == ProbeArg && os.Args[2] == testHangMode {
		time.Sleep(time.Hour)
	}
	if len(os.Args) > 1 && os.Args[1] == ProbeArg {
		os.Exit(ProbeMain())
	}
	os.Exit(m.Run())
}

// skipOrFail skips a test whose capability this host lacks; under CI a
// missing capability is a failure, so CI cannot pass by skipping.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and a required capability is missing: "+format, args...)
	}
	t.Skipf(format, args...)
}

// requireSeccompNotify skips unless the kernel knows SECCOMP_RET_USER_NOTIF
// and is new enough for CONTINUE (5.5).
func requireSeccompNotify(t *testing.T) {
	t.Helper()
	if err := seccompActionAvail(unix.SECCOMP_RET_USER_NOTIF); err != nil {
		skipOrFail(t, "seccomp user notification unavailable: %v", err)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		skipOrFail(t, "uname: %v", err)
	}
	release := unix.ByteSliceToString(uts.Release[:])
	v, err := parseKernelRelease(release)
	if err != nil || !v.atLeast(5, 5) {
		skipOrFail(t, "kernel %s predates SECCOMP_USER_NOTIF_FLAG_CONTINUE (5.5)", release)
	}
}

// requireBwrap skips unless a bwrap binary is on PATH.
func requireBwrap(t *testing.T) {
	t.Helper()
	if f := probeBwrap(t.Context(), "", DefaultTimeout); f.LookErr != nil {
		skipOrFail(t, "bubblewrap not installed: %v", f.LookErr)
	}
}
