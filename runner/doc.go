// Package runner starts and tears down sandboxes.
//
// Every sandbox starts through one path (startSandbox): bubblewrap started
// as an argv slice from a locked thread, the handshake, the supervisor. The
// one-shot launcher adds the terminal's foreground group handed to the
// workload and back, the signal ladder and exit codes; sessions add spawning
// on request. It also owns the in-sandbox init: the same
// binary re-executed inside bubblewrap, which installs the seccomp notify
// filter, hands the listener to the host over an inherited socket, spawns the
// command, reaps every descendant and reports true wait statuses. The host
// side runs the supervisor on the listener. Configuration reaches the init
// over the inherited socket only; nothing of cordon's plumbing reaches the
// workload.
package runner
