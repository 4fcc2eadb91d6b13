//go:build cgo

package main

// This file holds what "cordon policy check" shows of the commands a shell
// started with -c would run. It parses the script with mvdan.cc/sh (a real
// POSIX/bash parser) and is used by check only, never when deciding an exec:
// in a run every inner command is decided by itself when it is exec'd.

import (
	"fmt"
	"io"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// maxNestedShells bounds how deep check follows sh -c inside sh -c.
const maxNestedShells = 4

// shells are the programs whose -c argument check parses as a script.
var shells = map[string]syntax.LangVariant{
	"sh": syntax.LangPOSIX, "dash": syntax.LangPOSIX, "ash": syntax.LangPOSIX,
	"bash": syntax.LangBash, "zsh": syntax.LangBash, "ksh": syntax.LangMirBSDKorn,
	"mksh": syntax.LangMirBSDKorn,
}

// shellBuiltins run inside the shell: no exec, so no decision.
var shellBuiltins = map[string]bool{}

func init() {
	for _, b := range strings.Fields(`alias bg bind break builtin caller cd compgen
		complete compopt continue declare dirs disown echo enable exit export false
		fc fg getopts hash help history jobs kill let local logout mapfile popd
		printf pushd pwd read readarray readonly return set shift shopt source
		suspend test times trap true type typeset ulimit umask unalias unset wait
		[ . :`) {
		shellBuiltins[b] = true
	}
}

// shellScript returns the script a shell command line runs with -c, and
// the shell's language, or ok false when argv is not a shell given -c.
func shellScript(argv []string) (script string, lang syntax.LangVariant, ok bool) {
	if len(argv) < 2 {
		return "", 0, false
	}
	name := argv[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	lang, known := shells[strings.TrimPrefix(name, "-")]
	if !known {
		return "", 0, false
	}
	hasC := false
	for i := 1; i < len(argv); i++ {
		s := argv[i]
		switch {
		case s == "--" || s == "-":
			if hasC && i+1 < len(argv) {
				return argv[i+1], lang, true
			}
			return "", 0, false
		case strings.HasPrefix(s, "--"):
			// --login, --norc, --posix ... (--rcfile FILE takes a value)
			if s == "--rcfile" || s == "--init-file" {
				i++
			}
		case len(s) > 1 && (s[0] == '-' || s[0] == '+'):
			for _, c := range s[1:] {
				switch c {
				case 'c':
					hasC = true
				case 'o', 'O':
					i++ // -o OPTION, -O SHOPT
				}
			}
		default:
			if hasC {
				return s, lang, true
			}
			return "", 0, false
		}
	}
	return "", 0, false
}

// innerCommand is one simple command of a script: a static argv, or the
// script text of a command whose words are only known when it runs.
type innerCommand struct {
	argv    []string
	dynamic string // set when the words are not all static
	builtin bool
}

// innerCommands lists the simple commands of script in the order they
// appear, including those in pipelines, lists, subshells, command
// substitutions and function bodies.
func innerCommands(script string, lang syntax.LangVariant) ([]innerCommand, error) {
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	var out []innerCommand
	printer := syntax.NewPrinter()
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var argv []string
		static := true
		for _, w := range call.Args {
			s, ok := staticWord(w)
			if !ok {
				static = false
				break
			}
			argv = append(argv, s)
		}
		if !static && len(argv) > 0 && shellBuiltins[argv[0]] {
			// echo "$x": a builtin whatever its arguments.
			out = append(out, innerCommand{argv: argv, builtin: true})
			return true
		}
		if !static {
			var b strings.Builder
			for i, w := range call.Args {
				if i > 0 {
					b.WriteByte(' ')
				}
				_ = printer.Print(&b, w)
			}
			out = append(out, innerCommand{dynamic: b.String()})
			return true
		}
		// exec and command run the rest as a program.
		for len(argv) > 1 && (argv[0] == "exec" || argv[0] == "command") && !strings.HasPrefix(argv[1], "-") {
			argv = argv[1:]
		}
		out = append(out, innerCommand{argv: argv, builtin: shellBuiltins[argv[0]] || argv[0] == "eval"})
		return true
	})
	return out, nil
}

// staticWord returns the value of w when it has one before the script
// runs: literal text and quotes, no expansion of any kind (parameters,
// command substitution, arithmetic, globs, braces, a leading ~).
func staticWord(w *syntax.Word) (string, bool) {
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[") || (i == 0 && strings.HasPrefix(p.Value, "~")) ||
				(strings.Contains(p.Value, "{") && (strings.Contains(p.Value, ",") || strings.Contains(p.Value, ".."))) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return "", false
				}
			}
		default:
			return "", false
		}
	}
	s, err := expand.Literal(nil, w)
	return s, err == nil
}

// printInner prints the decision of each inner command of argv when argv
// is a shell given -c, and returns the strictest of them (Allow when
// there is none). Commands whose words are known only at run time are
// listed as such: cordon decides them when they are exec'd.
func printInner(out io.Writer, pol *policy.Policy, argv []string, depth int) policy.Decision {
	script, lang, ok := shellScript(argv)
	if !ok || depth >= maxNestedShells {
		return policy.Allow
	}
	indent := strings.Repeat("  ", depth+1)
	cmds, err := innerCommands(script, lang)
	if err != nil {
		fmt.Fprintf(out, "%sthe script does not parse (%v): its commands are decided when they run\n", indent, err)
		return policy.Allow
	}
	if len(cmds) == 0 {
		return policy.Allow
	}
	fmt.Fprintf(out, "%sinner commands (each is decided again when it runs):\n", indent)
	worst := policy.Allow
	for _, c := range cmds {
		switch {
		case c.dynamic != "":
			fmt.Fprintf(out, "%s  at exec time: %s (words known only when it runs)\n", indent, supervisor.FormatArgv([]string{c.dynamic}))
		case c.builtin:
			fmt.Fprintf(out, "%s  builtin: %s (runs inside the shell, no exec)\n", indent, supervisor.FormatArgv(c.argv))
		default:
			res := pol.Decide(nameOnlyExec(c.argv))
			fmt.Fprintf(out, "%s  %s: %s (rule: %s)\n", indent, res.Decision, supervisor.FormatArgv(c.argv), res.RuleText())
			worst = max(worst, res.Decision)
			worst = max(worst, printInner(out, pol, c.argv, depth+2))
		}
	}
	return worst
}
