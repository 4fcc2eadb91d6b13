// Package doctor finds out whether this host can run cordon and explains what
// is missing. It owns the host checks behind `cordon doctor`: the kernel
// release, a behavioural probe of seccomp user notification and the flags
// cordon relies on (CONTINUE, WAIT_KILLABLE_RECV, FD_SYNC_WAKE_UP, TSYNC with a
// listener), user namespaces and the sysctls that gate them, bubblewrap, Yama's
// ptrace scope, WSL and cgroup v2. Every check that can be decided by doing the
// thing is decided that way: flags the kernel accepts but does not honour are
// reported as missing.
//
// Loading a seccomp filter cannot be undone, so the seccomp and user namespace
// probes run in a re-executed child of the current binary, entered through the
// hidden argument ProbeArg (dispatched by ProbeMain in main, and by TestMain in
// tests). The package never loads a filter into the calling process, never
// changes host configuration (it only prints the commands that would), and
// never decides policy; other commands reuse its results (ProbeSeccomp) to
// choose or report a degraded mode.
package doctor
