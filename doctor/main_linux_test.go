package doctor

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Probe modes only the test binary knows.
const (
	// testHangMode never answers, to prove the parent's bound.
	testHangMode = "test-hang"
	// testKillableControlMode runs the WAIT_KILLABLE_RECV behaviour probe
	// without the flag: the probe must then report the notification aborted.
	testKillableControlMode = "test-killable-control"
)

// TestMain lets the test binary play the probe child, as cordon's main does.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == ProbeArg && os.Args[2] == testHangMode {
		time.Sleep(time.Hour)
	}
	if len(os.Args) > 2 && os.Args[1] == ProbeArg && os.Args[2] == testKillableControlMode {
		f := signalAfterRecv(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, time.Now().Add(childBudget), os.Getppid(), true)
		if err := json.NewEncoder(os.Stdout).Encode(f); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == ProbeArg {
		os.Exit(ProbeMain())
	}
	// Under -race every child would sleep a second before exiting (the race
	// runtime's atexit_sleep_ms), eating half of a probe's bound.
	if _, ok := os.LookupEnv("GORACE"); !ok {
		_ = os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}
