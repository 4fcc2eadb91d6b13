//go:build cgo

// Command cordon runs a command inside a bubblewrap sandbox and decides every
// exec made inside it against an argv policy. See README.md.
package main

import (
	"os"

	"github.com/cordon-sandbox/cordon/doctor"
	"github.com/cordon-sandbox/cordon/runner"
)

func main() {
	// Hidden entry points run before cobra: the sandbox's init is this same
	// binary re-executed inside bubblewrap (runc's "init" pattern).
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case runner.InitArg:
			os.Exit(runner.InitMain())
		case runner.ConnectArg:
			os.Exit(runner.ConnectMain(os.Args[2:]))
		case doctor.ProbeArg:
			os.Exit(doctor.ProbeMain())
		}
	}
	os.Exit(run(os.Args[1:]))
}
