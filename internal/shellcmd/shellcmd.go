package shellcmd

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// MaxDepth bounds how deep Nested follows sh -c inside sh -c.
const MaxDepth = 4

// Bounds on what Commands reads. The parser's cost grows with the square
// of the nesting ($( inside $( ... 30,000 deep takes minutes and
// gigabytes), and a caller that must answer in time (an agent's hook)
// cannot wait for that: a script past a bound is refused, not read.
const (
	// MaxNesting bounds the depth of open brackets (parentheses,
	// braces, brackets and backquotes), counted on the raw text before
	// parsing, quotes ignored: an over-count only refuses sooner.
	MaxNesting = 64
	// MaxNodes bounds the syntax tree's size.
	MaxNodes = 200_000
	// maxDynamic bounds how much of a dynamic command Command.Dynamic
	// keeps: it is for messages.
	maxDynamic = 200
)

// ErrTooComplex marks a script past MaxNesting or MaxNodes.
var ErrTooComplex = errors.New("too complex to check")

// nesting returns the deepest bracket nesting in script.
func nesting(script string) int {
	depth, most := 0, 0
	tick := false
	for i := 0; i < len(script); i++ {
		switch script[i] {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		case '`':
			// Backquotes nest only when escaped; count each as a level
			// while open.
			if tick = !tick; tick {
				depth++
			} else if depth > 0 {
				depth--
			}
		}
		most = max(most, depth)
	}
	return most
}

// shells are the programs whose -c argument is parsed as a script.
var shells = map[string]syntax.LangVariant{
	"sh": syntax.LangPOSIX, "dash": syntax.LangPOSIX, "ash": syntax.LangPOSIX,
	"bash": syntax.LangBash, "zsh": syntax.LangBash, "ksh": syntax.LangMirBSDKorn,
	"mksh": syntax.LangMirBSDKorn,
}

// builtins run inside the shell: no exec, so no decision.
var builtins = map[string]bool{}

func init() {
	for _, b := range strings.Fields(`alias bg bind break builtin caller cd compgen
		complete compopt continue declare dirs disown echo enable exit export false
		fc fg getopts hash help history jobs kill let local logout mapfile popd
		printf pushd pwd read readarray readonly return set shift shopt source
		suspend test times trap true type typeset ulimit umask unalias unset wait
		[ . :`) {
		builtins[b] = true
	}
}

// Script returns the script a shell command line runs with -c, and the
// shell's language, or ok false when argv is not a shell given -c.
func Script(argv []string) (script string, lang syntax.LangVariant, ok bool) {
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

// Command is one simple command of a script: a static argv, or the script
// text of a command whose words are only known when it runs.
type Command struct {
	Argv []string
	// Dynamic is set when the words are not all static: the command as
	// written.
	Dynamic string
	// Builtin: the command runs inside the shell, without an exec (eval
	// included: what it evaluates is decided when it runs).
	Builtin bool
}

// Commands lists the simple commands of script in the order they appear,
// including those in pipelines, lists, subshells, command substitutions and
// function bodies.
//
// A script nested deeper than MaxNesting, or whose tree has more than
// MaxNodes nodes, is an error wrapping ErrTooComplex.
func Commands(script string, lang syntax.LangVariant) ([]Command, error) {
	var out []Command
	printer := syntax.NewPrinter()
	err := walkCalls(script, lang, func(call *syntax.CallExpr) {
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
		if !static && len(argv) > 0 && builtins[argv[0]] {
			// echo "$x": a builtin whatever its arguments.
			out = append(out, Command{Argv: argv, Builtin: true})
			return
		}
		if !static {
			var b strings.Builder
			for i, w := range call.Args {
				if i > 0 {
					b.WriteByte(' ')
				}
				_ = printer.Print(&b, w)
			}
			d := b.String()
			if len(d) > maxDynamic {
				d = strings.ToValidUTF8(d[:maxDynamic], "") + "..."
			}
			out = append(out, Command{Dynamic: d})
			return
		}
		// exec and command run the rest as a program.
		for len(argv) > 1 && (argv[0] == "exec" || argv[0] == "command") && !strings.HasPrefix(argv[1], "-") {
			argv = argv[1:]
		}
		out = append(out, Command{Argv: argv, Builtin: builtins[argv[0]] || argv[0] == "eval"})
	})
	return out, err
}

// Word is one word of a simple command as Calls reads it: its value when
// the script gives it before it runs, or Dynamic when the shell computes
// it (an expansion, a glob, a brace, a leading ~).
type Word struct {
	Value   string
	Dynamic bool
}

// Calls lists the words of every simple command of script, in order, each
// word static or dynamic (see Word): for callers that match rules against
// commands word by word (package policy's ssh remote commands). The same
// bounds as Commands apply.
func Calls(script string, lang syntax.LangVariant) ([][]Word, error) {
	var out [][]Word
	err := walkCalls(script, lang, func(call *syntax.CallExpr) {
		ws := make([]Word, len(call.Args))
		for i, w := range call.Args {
			s, ok := staticWord(w)
			ws[i] = Word{Value: s, Dynamic: !ok}
		}
		out = append(out, ws)
	})
	return out, err
}

// walkCalls parses script within the bounds (MaxNesting, MaxNodes) and
// calls fn for each simple command with words, in order: the one parse
// both Commands and Calls read.
func walkCalls(script string, lang syntax.LangVariant, fn func(*syntax.CallExpr)) error {
	if d := nesting(script); d > MaxNesting {
		return fmt.Errorf("%w: brackets nested %d deep, over cordon's limit of %d", ErrTooComplex, d, MaxNesting)
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		return err
	}
	nodes := 0
	syntax.Walk(f, func(n syntax.Node) bool {
		if nodes++; nodes > MaxNodes {
			return false
		}
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			fn(call)
		}
		return true
	})
	if nodes > MaxNodes {
		return fmt.Errorf("%w: over %d syntax nodes", ErrTooComplex, MaxNodes)
	}
	return nil
}

// staticWord returns the value of w when it has one before the script
// runs: literal text and quotes, no expansion of any kind (parameters,
// command substitution, arithmetic, globs, braces, a leading ~), with the
// backslashes the shell removes removed (\rm is rm).
func staticWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[") || (i == 0 && strings.HasPrefix(p.Value, "~")) ||
				(strings.Contains(p.Value, "{") && (strings.Contains(p.Value, ",") || strings.Contains(p.Value, ".."))) {
				return "", false
			}
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescape(l.Value, true))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape removes the backslashes the shell removes: before any byte
// outside quotes (a backslash-newline disappears), before $ ` " \ and
// newline inside double quotes.
func unescape(s string, dquoted bool) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			c := s[i+1]
			if !dquoted || strings.IndexByte("$`\"\\\n", c) >= 0 {
				if c != '\n' {
					b.WriteByte(c)
				}
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Inner is one command found by Nested: a Command of the script of a shell
// given -c, at Depth levels of sh -c (1 for the outermost script), or a
// script that does not parse (Err).
type Inner struct {
	Command
	Depth int
	Err   error
}

// Nested lists the commands a shell command line would run, as far as its
// script says before it runs: when argv is a shell given -c, every command
// of its script, each followed by the commands of its own sh -c, up to
// MaxDepth levels. A script that does not parse is one Inner with Err set.
// It returns nothing when argv is not a shell given -c.
func Nested(argv []string) []Inner {
	var out []Inner
	var walk func(argv []string, depth int)
	walk = func(argv []string, depth int) {
		script, lang, ok := Script(argv)
		if !ok || depth > MaxDepth {
			return
		}
		cmds, err := Commands(script, lang)
		if errors.Is(err, ErrTooComplex) {
			out = append(out, Inner{Depth: depth, Err: err})
			return
		}
		if err != nil {
			out = append(out, Inner{Depth: depth, Err: fmt.Errorf("the script does not parse: %w", err)})
			return
		}
		for _, c := range cmds {
			out = append(out, Inner{Command: c, Depth: depth})
			if c.Dynamic == "" && !c.Builtin {
				walk(c.Argv, depth+1)
			}
		}
	}
	walk(argv, 1)
	return out
}
