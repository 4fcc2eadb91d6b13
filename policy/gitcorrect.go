package policy

import (
	"math/bits"
	"strings"
	"sync"
)

// Git's help.autocorrect: when the subcommand is not a git command, git
// compares it with every command it knows and, with autocorrect on and one
// best candidate close enough, runs that command in-process ("git pusj"
// pushes). help.c scores a candidate by a weighted Damerau-Levenshtein
// distance (swap 0, substitution 2, insertion 1, deletion 3) plus one, a
// common command the word is a prefix of scores 0, and a score below 7 is
// close enough. Whether autocorrect is on lives in config files cordon
// cannot see, so it is assumed on unless the command line turns it off.

// gitCommands are git's commands (git --list-cmds=main,nohelpers, plus
// ones added in later releases). A subcommand outside this list is either
// an alias or extension cordon cannot see, or a typo git may correct.
const gitCommandNames = `add am annotate apply archive backfill bisect blame
	branch bugreport bundle cat-file check-attr check-ignore check-mailmap
	check-ref-format checkout checkout-index cherry cherry-pick citool clean
	clone column commit commit-graph commit-tree config count-objects
	credential credential-cache credential-store daemon describe diagnose
	diff diff-files diff-index diff-pairs diff-tree difftool fast-export
	fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref
	for-each-repo format-patch fsck fsck-objects gc get-tar-commit-id gitk
	grep gui hash-object help hook http-backend http-fetch http-push
	imap-send index-pack init init-db instaweb interpret-trailers
	last-modified log ls-files ls-remote ls-tree mailinfo mailsplit
	maintenance merge merge-base merge-file merge-index merge-octopus
	merge-one-file merge-ours merge-recursive merge-recursive-ours
	merge-recursive-theirs merge-resolve merge-subtree merge-tree mergetool
	mktag mktree multi-pack-index mv name-rev notes p4 pack-objects
	pack-redundant pack-refs patch-id pickaxe prune prune-packed pull push
	quiltimport range-diff read-tree rebase receive-pack reflog refs remote
	remote-ext remote-fd remote-ftp remote-ftps remote-http remote-https
	repack replace replay repo request-pull rerere reset restore rev-list
	rev-parse revert rm scalar send-email send-pack shell shortlog show
	show-branch show-index show-ref sparse-checkout stage stash status
	stripspace submodule subtree svn switch symbolic-ref tag unpack-file
	unpack-objects update-index update-ref update-server-info upload-archive
	upload-pack var verify-commit verify-pack verify-tag version
	whatchanged worktree write-tree`

var gitCommands = lazySet(gitCommandNames)

// gitCommandList is gitCommands in a fixed order, gitCommandMasks their
// letters (see letterMask).
var (
	gitCommandList  = sync.OnceValue(func() []string { return strings.Fields(gitCommandNames) })
	gitCommandMasks = sync.OnceValue(func() []uint64 {
		m := make([]uint64, len(gitCommandList()))
		for i, c := range gitCommandList() {
			m[i] = letterMask(c)
		}
		return m
	})
)

// letterMask has a bit per distinct byte of s (folded to 64 bits).
func letterMask(s string) uint64 {
	var m uint64
	for i := 0; i < len(s); i++ {
		m |= 1 << (s[i] & 63)
	}
	return m
}

// lowerBound is a cheap lower bound of gitLevenshtein(typed, candidate)
// from their letter masks: each letter of typed that candidate lacks costs
// a deletion or a substitution (2 at least), each letter of candidate that
// typed lacks an insertion or a substitution (1 at least). Folded bytes
// only make the bound smaller.
func lowerBound(typed, cand uint64) int {
	return max(2*bits.OnesCount64(typed&^cand), bits.OnesCount64(cand&^typed))
}

// gitCommon are the commands "git help" lists; git scores a prefix of one
// of them 0.
var gitCommon = lazySet(`clone init add mv restore rm bisect diff grep log show
	status branch commit merge rebase reset switch tag fetch pull push`)

// gitSimilarityFloor is git's SIMILARITY_FLOOR: a score below it is close
// enough to correct to.
const gitSimilarityFloor = 7

// gitScore returns git's autocorrect score of candidate for typed, or some
// score of at least gitSimilarityFloor when it is not close enough.
func gitScore(typed, candidate string) int {
	if gitCommon()[candidate] && strings.HasPrefix(candidate, typed) {
		return 0
	}
	return gitLevenshteinMax(typed, candidate, gitSimilarityFloor-1) + 1
}

func minOf(row []int) int {
	m := row[0]
	for _, v := range row[1:] {
		m = min(m, v)
	}
	return m
}

// gitLevenshtein is git's levenshtein(typed, candidate, 0, 2, 1, 3): the
// cheapest edit of typed into candidate with swaps of adjacent letters
// free, substitutions 2, insertions 1 and deletions 3. Long words are
// never close to a command; they get a large distance without the work.
func gitLevenshtein(s1, s2 string) int {
	return gitLevenshteinMax(s1, s2, 1<<20)
}

// gitLevenshteinMax is gitLevenshtein, except that it may return any value
// above limit as soon as the distance is known to exceed it (a row's
// minimum never decreases).
func gitLevenshteinMax(s1, s2 string, limit int) int {
	const w, s, a, d = 0, 2, 1, 3
	const maxLen = 48
	if len(s1) > maxLen || len(s2) > maxLen {
		return 1 << 20
	}
	var r0, r1, r2 [maxLen + 1]int
	row0, row1, row2 := r0[:len(s2)+1], r1[:len(s2)+1], r2[:len(s2)+1]
	for j := range row1 {
		row1[j] = j * a
	}
	for i := 0; i < len(s1); i++ {
		row2[0] = (i + 1) * d
		lo := row2[0]
		for j := 0; j < len(s2); j++ {
			sub := 0
			if s1[i] != s2[j] {
				sub = s
			}
			row2[j+1] = row1[j] + sub
			if i > 0 && j > 0 && s1[i-1] == s2[j] && s1[i] == s2[j-1] && row2[j+1] > row0[j-1]+w {
				row2[j+1] = row0[j-1] + w
			}
			if row2[j+1] > row1[j+1]+d {
				row2[j+1] = row1[j+1] + d
			}
			if row2[j+1] > row2[j]+a {
				row2[j+1] = row2[j] + a
			}
			lo = min(lo, row2[j+1])
		}
		// A free swap reaches back two rows: only when both rows are past
		// the limit is the distance.
		if lo > limit && i > 0 && minOf(row1) > limit {
			return lo
		}
		row0, row1, row2 = row1, row2, row0
	}
	return row1[len(s2)]
}

// gitAutocorrectOff reports whether git's global options (before the
// subcommand at index sub) turn autocorrect off with -c
// help.autocorrect=0|never|show|false (the last one counts). A later
// --config-env help.autocorrect=VAR sets it from the environment, a value
// cordon cannot see: autocorrect counts as on again.
func gitAutocorrectOff(v []string, sub int) bool {
	off := false
	for i := 0; i < sub; i++ {
		var kv string
		switch s := v[i]; {
		case (s == "-c" || s == "--config-env") && i+1 < sub:
			kv = v[i+1]
			i++
			if s == "--config-env" {
				if k, _, _ := strings.Cut(kv, "="); strings.EqualFold(k, "help.autocorrect") {
					off = false
				}
				continue
			}
		case strings.HasPrefix(s, "--config-env="):
			if k, _, _ := strings.Cut(s[len("--config-env="):], "="); strings.EqualFold(k, "help.autocorrect") {
				off = false
			}
			continue
		default:
			if strings.IndexByte(s, '=') < 0 && toolFor("git").before[s] {
				i++
			}
			continue
		}
		k, val, _ := strings.Cut(kv, "=")
		if strings.EqualFold(k, "help.autocorrect") {
			switch strings.ToLower(val) {
			case "0", "never", "show", "false", "no", "off":
				off = true
			default:
				off = false
			}
		}
	}
	return off
}

// maxGitCommands bounds gitCommandList (TestGitAutocorrect checks it), so
// that the scores of one decision fit on the stack.
const maxGitCommands = 256

// gitMargin widens, for deny and ask rules, the candidates git might pick
// beyond those with the best score: other git versions list other common
// commands and score a little differently.
const gitMargin = 2

// gitAutocorrect decides an unknown git subcommand as git may correct it.
// git runs the one candidate with the best score, when there is exactly
// one close enough (an alias from config, which cordon cannot see, wins
// only by scoring better, and runs what it says, not a command). So the
// unique best candidate is decided fully, and every candidate within
// gitMargin of the best score for deny and ask rules only.
func (d *decider) gitAutocorrect(pr *progRules, a *args) {
	typed := a.sub
	if typed == "" || gitCommands()[typed] || gitAutocorrectOff(a.v, int(a.pos[0])) {
		return
	}
	if _, alias := findAlias(a.v[:a.pos[0]], typed); alias {
		return // an alias given with -c (a shell alias, or a loop git rejects)
	}
	var scores [maxGitCommands]int8
	best, nbest := gitSimilarityFloor, 0
	bestCmd := ""
	tm := letterMask(typed)
	for i, c := range gitCommandList() {
		sc := gitSimilarityFloor
		// Insertions cost 1 and deletions 3, and missing letters cost too:
		// most commands are out of reach without computing a distance.
		n := len(c) - len(typed)
		if (n < gitSimilarityFloor-1 && n > -2 && lowerBound(tm, gitCommandMasks()[i]) < gitSimilarityFloor-1) ||
			(gitCommon()[c] && strings.HasPrefix(c, typed)) {
			sc = gitScore(typed, c)
		}
		scores[i] = int8(min(sc, gitSimilarityFloor))
		switch {
		case sc >= gitSimilarityFloor:
		case sc < best:
			best, nbest, bestCmd = sc, 1, c
		case sc == best:
			nbest++
		}
	}
	if nbest == 0 {
		return
	}
	was := d.denyOnly
	d.denyOnly = true
	for i, c := range gitCommandList() {
		if sc := int(scores[i]); sc < gitSimilarityFloor && sc <= best+gitMargin && c != bestCmd {
			d.decideSub(pr, a, c)
		}
	}
	d.denyOnly = was
	if nbest == 1 {
		d.decideSub(pr, a, bestCmd)
	} else {
		d.denyOnly = true
		d.decideSub(pr, a, bestCmd)
		d.denyOnly = was
	}
}

// decideSub runs pr's rules on a as if its subcommand were sub.
func (d *decider) decideSub(pr *progRules, a *args, sub string) {
	b := *a
	b.sub = sub
	d.runArgs(pr.bySub[sub], &b, nil)
	d.runArgs(pr.other, &b, nil)
}
