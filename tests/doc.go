// Package tests holds cordon's integration and adversarial tests. They build
// the real binary once (TestMain) and run it against real bubblewrap, real
// seccomp notifications and real processes.
package tests
