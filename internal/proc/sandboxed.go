package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// InitArg is the hidden first argument that makes the cordon binary run
// as a sandbox's init (runner.InitArg is this constant).
const InitArg = "__cordon-init"

// UnderCordonInit reports whether pid runs inside a cordon sandbox, in any
// tier: pid or one of its ancestors is a sandbox's init (its argv[1] is
// InitArg), or one of its ancestors is a cordon process itself (its
// executable is cordonExe, or its argv[0] is named cordon): in the bare
// tiers a process that killed its init is adopted by the cordon that ran
// it, and nothing else a cordon process starts is a client of the daemon.
// The init is a subreaper, so a descendant that detaches (setsid, double
// fork) stays below it. A process whose ancestry cannot be read counts as
// inside: the answer is used to refuse.
func UnderCordonInit(pid int, cordonExe string) bool {
	var exe os.FileInfo
	if cordonExe != "" {
		exe, _ = os.Stat(cordonExe)
	}
	for depth := 0; pid > 1 && depth < 4096; depth++ {
		dir := "/proc/" + strconv.Itoa(pid)
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			return true
		}
		args := bytes.Split(cmdline, []byte{0})
		if len(args) > 1 && string(args[1]) == InitArg {
			return true
		}
		if depth > 0 {
			if filepath.Base(string(args[0])) == "cordon" {
				return true
			}
			// Unreadable for a process of another user or a non-dumpable
			// one: not a cordon process of ours, which the name or the
			// init's argument above would have shown.
			if fi, err := os.Stat(dir + "/exe"); err == nil && exe != nil && os.SameFile(fi, exe) {
				return true
			}
		}
		st, err := ReadStat(pid)
		if err != nil {
			return true
		}
		pid = st.PPid
	}
	return false
}
