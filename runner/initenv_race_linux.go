//go:build race

package runner

import "os"

// initEnv is the environment the init starts with. A race-detector build
// (the test suite's) passes its GORACE settings on: without them the init,
// the same binary, sleeps a second at exit (the detector's atexit_sleep_ms),
// and the bare tiers' teardown waits for the init's exit. A normal build
// passes nothing (initenv_linux.go).
func initEnv() []string {
	if v, ok := os.LookupEnv("GORACE"); ok {
		return []string{"GORACE=" + v}
	}
	return []string{}
}
