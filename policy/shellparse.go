package policy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// dynamicWord stands for a word whose value is only known when the shell
// runs (a parameter, a command substitution): it matches any program.
const dynamicWord = "\x00"

// maxShellDepth bounds how deep shellCalls follows sh -c and eval.
const maxShellDepth = 3

// shellCalls parses script as a POSIX/bash shell would and returns the
// words of every simple command in it, quotes and backslashes removed,
// following sh -c SCRIPT and eval. ok is false when it does not parse.
func shellCalls(script string, depth int) (calls [][]string, ok bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, false
	}
	ok = true
	syntax.Walk(f, func(n syntax.Node) bool {
		ce, isCall := n.(*syntax.CallExpr)
		if !isCall || len(ce.Args) == 0 {
			return true
		}
		words := make([]string, 0, len(ce.Args))
		for _, w := range ce.Args {
			words = append(words, literalWord(w))
		}
		calls = append(calls, words)
		if depth >= maxShellDepth {
			return true
		}
		var inner string
		switch p := baseName(words[0]); {
		case p == "eval":
			inner = strings.Join(words[1:], " ")
		case shellNames[p]:
			for i := 1; i+1 < len(words); i++ {
				if strings.HasPrefix(words[i], "-") && strings.Contains(words[i], "c") && !strings.HasPrefix(words[i], "--") {
					inner = words[i+1]
					break
				}
			}
		}
		if inner != "" {
			sub, subOK := shellCalls(inner, depth+1)
			calls = append(calls, sub...)
			ok = ok && subOK
		}
		return true
	})
	return calls, ok
}

var shellNames = setOf(`sh bash dash zsh ksh mksh ash busybox`)

// literalWord returns w's value with quotes and escapes removed, or
// dynamicWord when part of it is only known at run time.
func literalWord(w *syntax.Word) string {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return dynamicWord
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, isLit := q.(*syntax.Lit)
				if !isLit {
					return dynamicWord
				}
				b.WriteString(unescape(l.Value, true))
			}
		default:
			return dynamicWord
		}
	}
	return b.String()
}

// unescape removes the backslashes the shell removes: before any byte
// outside quotes, before $ ` " \ and newline inside double quotes.
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
