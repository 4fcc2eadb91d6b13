package proc

import (
	"bytes"
	"os"
	"strconv"
)

// InitArg is the hidden first argument that makes the cordon binary run
// as a sandbox's init (runner.InitArg is this constant).
const InitArg = "__cordon-init"

// UnderCordonInit reports whether pid or one of its ancestors runs as a
// cordon sandbox's init (its argv[1] is InitArg): whether the process is
// inside a sandbox, in any tier. The init is a subreaper, so a descendant
// that detaches (setsid, double fork) stays below it. A process whose
// ancestry cannot be read counts as inside: the answer is used to refuse.
func UnderCordonInit(pid int) bool {
	for depth := 0; pid > 1 && depth < 4096; depth++ {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			return true
		}
		args := bytes.Split(cmdline, []byte{0})
		if len(args) > 1 && string(args[1]) == InitArg {
			return true
		}
		st, err := ReadStat(pid)
		if err != nil {
			return true
		}
		pid = st.PPid
	}
	return false
}
