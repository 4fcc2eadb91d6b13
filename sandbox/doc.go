// Package sandbox runs commands in cordon sandboxes that live across
// commands (sessions) and tracks what they start (processes).
//
// It owns the session and process life cycle on the host: creating a
// session (one bubblewrap sandbox, its init and its exec supervisor under
// one policy), running a command to completion (Exec, stateless by default),
// starting a process with a random id and streaming its output, policy
// decisions and exit as events with cursors (Start, Events), signalling and
// killing a process's whole tree however it detached, and closing a session
// so that nothing of it survives. Manager implements service.Service, the
// interface a transport (the daemon's HTTP API) exposes; the request,
// result and event types are package service's, named here by aliases
// (api.go) so that the daemon's client can use them without linking this
// package.
//
// It must never signal a pid it has not verified (every signal goes through
// a pidfd of a process known to be in the tree), never copy a process's
// output through the sandbox (pipes are created here and handed to the
// init), never report a guessed exit status as a real one, and never keep
// shell state (carry mode) that points outside the sandbox's view.
//
// # Trees
//
// The sandbox's init starts each process under a shim of its own that is a
// child subreaper (see runner/spawn_unsafe.go): a descendant that calls
// setsid, double-forks or is nohup'd re-parents to the shim, not to the
// init, so the process's tree is the shim's descendants and the tree is
// empty exactly when the shim exits. Tree walks read
// /proc/PID/task/*/children from the shim down, open a pidfd for each
// member and check after opening that its parent is still the member it
// was found under, so a pid reused in between is never signalled
// (proc.Descendants, also the bare tiers' kill of a whole run). cgroup v2
// (cgroup.kill) is not used: it is often not delegated, and the shim gives
// the same containment without it. The limit: the workload runs as the same
// user as the shim and can SIGKILL it; a tree whose shim was killed is
// re-parented to the init and is then reached only through the leader's own
// descendants and by closing the session.
package sandbox
