//go:build cgo

package main

// This file holds what "cordon policy check" shows of the commands a shell
// started with -c would run. The reading is package shellcmd's (the one
// static analysis, shared with "cordon hook"); it is never used when
// deciding an exec: in a run every inner command is decided by itself when
// it is exec'd.

import (
	"fmt"
	"io"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/shellcmd"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
)

// printInner prints the decision of each inner command of argv when argv
// is a shell given -c, and returns the strictest of them (Allow when
// there is none). Commands whose words are known only at run time are
// listed as such: cordon decides them when they are exec'd.
func printInner(out io.Writer, pol *policy.Policy, argv []string) policy.Decision {
	worst := policy.Allow
	prev := 0
	for _, c := range shellcmd.Nested(argv) {
		// A nested script is indented two levels below the command that
		// runs it.
		indent := strings.Repeat("  ", 2*c.Depth-1)
		if c.Err != nil {
			fmt.Fprintf(out, "%s%v: its commands are decided when they run\n", indent, c.Err)
			prev = c.Depth
			continue
		}
		if c.Depth > prev {
			fmt.Fprintf(out, "%sinner commands (each is decided again when it runs):\n", indent)
		}
		prev = c.Depth
		switch {
		case c.Dynamic != "":
			fmt.Fprintf(out, "%s  at exec time: %s (words known only when it runs)\n", indent, supervisor.FormatArgv([]string{c.Dynamic}))
		case c.Builtin:
			fmt.Fprintf(out, "%s  builtin: %s (runs inside the shell, no exec)\n", indent, supervisor.FormatArgv(c.Argv))
		default:
			res := pol.Decide(nameOnlyExec(c.Argv))
			fmt.Fprintf(out, "%s  %s: %s (rule: %s)\n", indent, res.Decision, supervisor.FormatArgv(c.Argv), res.RuleText())
			worst = max(worst, res.Decision)
		}
	}
	return worst
}
