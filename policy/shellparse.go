package policy

import (
	"strings"

	"github.com/cordon-sandbox/cordon/internal/shellcmd"
	"mvdan.cc/sh/v3/syntax"
)

// dynamicWord stands for a word whose value is only known when the shell
// runs (a parameter, a command substitution): it matches any program.
const dynamicWord = "\x00"

// maxShellDepth bounds how deep shellCalls follows sh -c and eval.
const maxShellDepth = 3

// shellCalls parses script as bash would (internal/shellcmd: the one
// shell reading, with its bounds) and returns the words of every simple
// command in it, a word the shell computes as dynamicWord, following
// sh -c SCRIPT and eval. ok is false when it does not parse or is past the
// bounds.
func shellCalls(script string, depth int) (calls [][]string, ok bool) {
	parsed, err := shellcmd.Calls(script, syntax.LangBash)
	if err != nil {
		return nil, false
	}
	ok = true
	for _, ws := range parsed {
		words := make([]string, len(ws))
		for i, w := range ws {
			words[i] = w.Value
			if w.Dynamic {
				words[i] = dynamicWord
			}
		}
		calls = append(calls, words)
		if depth >= maxShellDepth {
			continue
		}
		var inner string
		switch p := baseName(words[0]); {
		case p == "eval":
			inner = strings.Join(words[1:], " ")
		case shellNames()[p]:
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
	}
	return calls, ok
}

var shellNames = lazySet(`sh bash dash zsh ksh mksh ash busybox`)
