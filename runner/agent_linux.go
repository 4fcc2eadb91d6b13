package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cordon-sandbox/cordon/bwrap"
)

// keyDirs are where deny_read hides private keys that an agent holds
// (relative to home): ssh's and gpg's.
var keyDirs = []string{".ssh", ".gnupg"}

// agentSockets lists the ssh (and gpg-as-ssh) agent sockets this process
// can see: SSH_AUTH_SOCK from cordon's own environment (the command's is
// scrubbed, but the path is the same), ssh-agent's default
// /tmp/ssh-*/agent.*, and the per-user runtime sockets of GNOME Keyring,
// gcr, gpg-agent and systemd's ssh-agent unit.
func agentSockets(home string) []string {
	var cands []string
	if s := os.Getenv("SSH_AUTH_SOCK"); s != "" {
		cands = append(cands, s)
	}
	for _, tmp := range []string{os.TempDir(), "/tmp"} {
		m, _ := filepath.Glob(filepath.Join(tmp, "ssh-*", "agent.*"))
		cands = append(cands, m...)
	}
	runtime := os.Getenv("XDG_RUNTIME_DIR")
	if runtime == "" {
		runtime = "/run/user/" + strconv.Itoa(os.Getuid())
	}
	for _, n := range []string{"keyring/ssh", "gcr/ssh", "gnupg/S.gpg-agent.ssh", "openssh_agent", "ssh-agent.socket"} {
		cands = append(cands, filepath.Join(runtime, n))
	}
	if home != "" {
		cands = append(cands, filepath.Join(home, ".gnupg", "S.gpg-agent.ssh"))
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range cands {
		fi, err := os.Stat(c)
		if err != nil || fi.Mode()&os.ModeSocket == 0 || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	return out
}

// landlockAgentCheck refuses a landlock-tier run whose files policy hides
// private keys while an agent that signs with them is reachable. Landlock
// below ABI 9 does not restrict connecting to a named unix socket, and
// the socket's path is easily found even with SSH_AUTH_SOCK scrubbed: the
// command would sign (git push over ssh) with the keys it cannot read.
// The bwrap tier does not show the host's /tmp or /run/user.
func landlockAgentCheck(unreadable []bwrap.Unreadable, home string) error {
	if home == "" {
		return nil
	}
	var key string
	for _, u := range unreadable {
		p := canonicalPath(u.Path)
		for _, d := range keyDirs {
			if under(p, canonicalPath(filepath.Join(home, d))) {
				key = u.Path
				break
			}
		}
	}
	if key == "" {
		return nil
	}
	socks := agentSockets(home)
	if len(socks) == 0 {
		return nil
	}
	return &SetupError{Err: fmt.Errorf("the landlock tier cannot keep the agent socket %s from the command: deny_read hides %s, but Landlock on this kernel does not stop connecting to a socket, so the command could sign with the keys it cannot read", socks[0], key),
		Hint: "make bubblewrap work here (cordon doctor says how), or stop the agent for this run (ssh-agent -k; unset SSH_AUTH_SOCK), or drop the key rules (--no-defaults) to accept this"}
}
