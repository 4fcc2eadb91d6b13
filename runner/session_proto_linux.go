package runner

// Session mode. After the configuration (Session set) and the listener, the
// host sends spawn requests and the init answers each with, in this order:
// spawned (or exec-failed when nothing could be started), exec-failed when
// the program could not be run, child-exited with the leader's wait status,
// and gone once the process's whole tree is empty. gone is always last.
const (
	msgSpawn      = "spawn"        // host: start a process; descriptors: the child's fds
	msgSpawned    = "spawned"      // init: ns pids; descriptors: the leader's and the shim's pidfds
	msgExecFailed = "exec-failed"  // init: the program could not be started; Op and Errno say why
	msgChildExit  = "child-exited" // init: the leader's wait status
	msgGone       = "gone"         // init: the tree is empty; Status is the shim's own wait status
)

// sessMsg is a session-mode message in either direction. Strings that name
// files or come from the caller travel as bytes, as in wireConfig.
type sessMsg struct {
	Kind string   `json:"kind"`
	ID   string   `json:"id,omitempty"`
	Argv [][]byte `json:"argv,omitempty"`
	Env  [][]byte `json:"env,omitempty"`
	Dir  []byte   `json:"dir,omitempty"`
	// Targets are the descriptor numbers, in the child, of the NFDs
	// descriptors sent with a spawn, in order.
	Targets []int `json:"targets,omitempty"`
	// NFDs is how many descriptors travel with this message. A stream read
	// can return the bytes of several frames and the descriptors of one of
	// them, so descriptors are queued as they arrive and each frame takes
	// its own, in order (see recvQueued).
	NFDs   int    `json:"nfds,omitempty"`
	Pid    int    `json:"pid,omitempty"`  // spawned: the leader, in the sandbox's pid namespace
	Shim   int    `json:"shim,omitempty"` // spawned: the leader's monitor (see spawn_unsafe.go)
	Op     string `json:"op,omitempty"`   // exec-failed: lookup, chdir, exec or spawn
	Errno  int    `json:"errno,omitempty"`
	Status uint32 `json:"status"`
}
