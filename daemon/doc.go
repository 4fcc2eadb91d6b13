// Package daemon owns the life of the per-user cordon daemon outside its
// HTTP handlers: where it lives, how exactly one runs, how a client finds it,
// decides it is alive, and starts it.
//
// Location: $XDG_RUNTIME_DIR/cordon when XDG_RUNTIME_DIR is a directory the
// user owns with mode 0700; else /run/user/UID/cordon under the same rule;
// else ~/.cache/cordon/run in the passwd database's home directory. The
// directory is created with mode 0700 and verified (a directory, not a
// symlink, owned by the user, mode 0700). TMPDIR is never consulted, so a
// client whose TMPDIR was rewritten (by a sandbox, say) finds the same
// daemon. The directory holds daemon.lock (an exclusive flock held for the
// daemon's life: one daemon per user), start.lock (serialises starters),
// daemon.json (the discovery file: pid, and socket or port and token; mode
// 0600, written atomically), daemon.sock and daemon.log.
//
// Liveness is decided by connecting and calling /v1/health. When that fails
// the lock decides: held means a daemon is alive (starting, or hung), free
// means whatever files are left are stale, and only a process holding the
// lock removes them. A pid check is the last resort, where the lock cannot
// be checked at all, and there EPERM from kill(pid, 0) means alive.
//
// It must never delete a file while another process may hold the lock,
// never trust a pid on its own, and never derive a path from TMPDIR.
package daemon
