// Package runner starts and tears down sandboxes.
//
// It owns the launcher (bubblewrap started as an argv slice in its own
// process group, the terminal's foreground group handed to the workload and
// back, the signal ladder, exit codes) and the in-sandbox init: the same
// binary re-executed inside bubblewrap, which installs the seccomp notify
// filter, hands the listener to the host over an inherited socket, spawns the
// command, reaps every descendant and reports true wait statuses. The host
// side runs the supervisor on the listener. Configuration reaches the init
// over the inherited socket only; nothing of cordon's plumbing reaches the
// workload.
package runner
