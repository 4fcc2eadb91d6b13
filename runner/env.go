package runner

import "strings"

// OwnEnvPrefix starts the name of every environment variable that is
// cordon's own plumbing or discovery (CORDON_HOST, CORDON_TOKEN,
// CORDON_TEST_INIT...).
const OwnEnvPrefix = "CORDON_"

// WorkloadEnv returns env without cordon's own variables: the environment
// a workload may see. Every command the runner starts, in a one-shot
// sandbox or a session, gets its environment through here, whoever built
// it (the CLI, the daemon's API, the Go library): CORDON_TOKEN and
// CORDON_HOST would let the workload drive the daemon and start commands
// outside every sandbox.
func WorkloadEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, OwnEnvPrefix) {
			out = append(out, kv)
		}
	}
	return out
}
