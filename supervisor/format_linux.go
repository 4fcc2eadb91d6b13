package supervisor

import (
	"github.com/cordon-sandbox/cordon/policy"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxLineArgv bounds how much of an argv a one-line message shows.
const maxLineArgv = 512

// FormatArgv renders argv on one line for people: words are separated by
// spaces, and a word that is empty or holds spaces, quotes, control
// characters or invalid UTF-8 is shown Go-quoted, so the line is unambiguous
// and never spans lines. Output longer than a few hundred bytes is cut with
// "...".
func FormatArgv(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if needsQuote(w) {
			b.WriteString(strconv.Quote(w))
		} else {
			b.WriteString(w)
		}
		if b.Len() > maxLineArgv {
			out := b.String()
			cut := maxLineArgv
			for cut > 0 && !utf8.RuneStart(out[cut]) {
				cut-- // never cut a character in half
			}
			return out[:cut] + "..."
		}
	}
	return b.String()
}

func needsQuote(w string) bool {
	if w == "" || !utf8.ValidString(w) {
		return true
	}
	for _, r := range w {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune(`"'\$`+"`", r) {
			return true
		}
	}
	return false
}

// DenialLine is the one line cordon prints when an exec is refused:
//
//	cordon: denied: git push origin main (rule: deny "git push")
//
// argv[0] is the caller's choice: when it names neither the path called nor
// the file that runs (exec -a ls git push), the line shows the path and
// says what argv[0] claimed.
func (d *Verdict) DenialLine() string {
	argv, note := d.Exec.Argv, ""
	if prog := d.Exec.Program(); len(argv) > 0 && prog != "" {
		a0 := path.Base(argv[0])
		if a0 != path.Base(d.Exec.Path) && a0 != path.Base(d.Exec.Resolved) {
			if d.Exec.Path != "" {
				prog = d.Exec.Path
			}
			argv = append([]string{prog}, argv[1:]...)
			note = " (argv[0] " + strconv.Quote(d.Exec.Argv[0]) + ")"
		}
	}
	why := "rule: " + d.Result.RuleText()
	switch {
	case d.Reason != "" && (d.Result.Decision == policy.Allow || d.Result.Rule == nil):
		why = d.Reason // no rule refused it; something else did
	case d.Reason != "":
		why += "; " + d.Reason
	}
	return "cordon: denied: " + FormatArgv(argv) + note + " (" + why + ")"
}
