//go:build linux && !amd64

package supervisor

// stackArgv reads a new image's argument strings from its stack on amd64
// only (see stackargv_linux_amd64.go); elsewhere /proc/PID/cmdline is read.
func stackArgv(int) ([]byte, bool) { return nil, false }
