package runner

import (
	"log/slog"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

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

// scrubEnv is the environment a command started by the runner gets:
// WorkloadEnv's, less the variables pol's env scrub removes (built-in
// credential names, env deny patterns, unless passed). This is the one
// place both a one-shot run and every spawn in a session go through,
// whatever built the environment (the CLI, the daemon's API, a session's
// carried exports). The names removed, never the values, are logged at
// debug level. A nil pol removes only cordon's own variables.
func scrubEnv(env []string, pol *policy.Policy, log *slog.Logger) []string {
	env = WorkloadEnv(env)
	if pol == nil {
		return env
	}
	kept, removed := pol.ScrubEnv(env)
	if len(removed) > 0 && log != nil {
		log.Debug("environment scrubbed", "removed", strings.Join(removed, ","))
	}
	return kept
}
