package policy

import "strings"

// sshArgs returns ssh's arguments with the remote command split the way
// the remote shell will split it: ssh joins the words after the
// destination with spaces and hands the string to the user's shell there,
// so "ssh h 'rm -rf /'" runs the same as "ssh h rm -rf /". It allocates
// only when a remote word holds a blank.
func sshArgs(t *tool, argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	v := argv[1:]
	first := remoteStart(t, v)
	if first < 0 {
		return v
	}
	split := false
	for _, w := range v[first:] {
		if strings.ContainsAny(w, " \t\n") {
			split = true
			break
		}
	}
	if !split {
		return v
	}
	out := append([]string(nil), v[:first]...)
	for _, w := range v[first:] {
		out = append(out, strings.Fields(w)...)
	}
	return out
}

// remoteStart returns the index in v (ssh's arguments) of the first word
// of the remote command, or -1 when there is none.
func remoteStart(t *tool, v []string) int {
	seen := 0
	endOpts := false
	for i := 0; i < len(v); i++ {
		s := v[i]
		if !endOpts && s == "--" {
			endOpts = true
			continue
		}
		if !endOpts && len(s) > 1 && s[0] == '-' {
			if strings.IndexByte(s, '=') < 0 && (t.takesValue(s, true) || t.clusterTakesValue(s, true)) {
				i++
			}
			continue
		}
		seen++
		if seen == 2 {
			return i
		}
	}
	return -1
}

// shellMeta are the characters that make a remote command more than the
// words an allow rule sees: the remote shell would chain, substitute,
// redirect or re-quote.
const shellMeta = ";&|`$()<>\\'\"\n*?[]{}~#!"

// remoteIsPlain reports whether ssh's remote command (every positional word
// after the destination) is plain words, with nothing the remote shell
// would interpret. An allow rule for ssh matches only such commands.
func remoteIsPlain(a *args) bool {
	for _, i := range a.pos[min(1, len(a.pos)):] {
		if strings.ContainsAny(a.v[i], shellMeta) {
			return false
		}
	}
	return true
}

// sshCarriers are the programs that connect to a host over ssh (rsync by
// default, and with -e ssh): the ssh rules for that host apply to them.
var sshCarriers = map[string]bool{"scp": true, "sftp": true, "rsync": true}

// sshCarrierList is sshCarriers in a fixed order.
var sshCarrierList = []string{"rsync", "scp", "sftp"}

// remoteHosts decides the hosts an scp, sftp or rsync command line
// connects to as "ssh HOST" would be decided, and keeps a deny or ask that
// gives: a rule on where ssh may go holds for what goes over ssh.
func (d *decider) remoteHosts(base string, argv []string) {
	pr := d.p.byName["ssh"]
	if pr == nil || len(argv) == 0 {
		return
	}
	t := toolFor(base)
	var kbuf [maxStackArgs]uint8
	var pbuf [maxStackArgs]int32
	var ebuf [maxStackArgs]int16
	a := parseArgs(t, argv[1:], kbuf[:0], pbuf[:0], ebuf[:0])
	check := func(host string) {
		if host == "" {
			return
		}
		sub := decider{p: d.p, top: d.top, best: rankNone}
		sub.byBase("ssh", []string{"ssh", host})
		if (sub.best == rankDeny || sub.best == rankAsk || sub.best == rankFinal) && d.better(sub.best, sub.rule) {
			d.best, d.rule = sub.best, sub.rule
		}
	}
	for i, k := range a.kind {
		switch {
		case k == kPos:
			check(remoteHostOf(base, a.v[i], i == int(a.pos[0])))
		case k == kOpt && (a.v[i] == "-J" || strings.HasPrefix(a.v[i], "-J")):
			j := a.v[i][2:]
			if j == "" && i+1 < len(a.v) {
				j = a.v[i+1]
			}
			for _, h := range strings.Split(j, ",") {
				check(h)
			}
		}
	}
}

// remoteHostOf returns the host a remote operand of scp, sftp or rsync
// names ([user@]host:path, host::module, scheme://[user@]host[:port]/path;
// sftp's destination, its first positional word, needs no colon), or ""
// for a local path.
func remoteHostOf(prog, w string, first bool) string {
	if i := strings.Index(w, "://"); i > 0 && !strings.ContainsRune(w[:i], '/') {
		return hostOf(w)
	}
	if strings.HasPrefix(w, "[") || strings.Contains(w, "@[") {
		// [user@][v6addr]:path
		if j := strings.IndexByte(w, ']'); j > 0 && j+1 < len(w) && w[j+1] == ':' {
			return hostOf(w[:j+1])
		}
	}
	c := strings.IndexByte(w, ':')
	if c < 0 {
		if prog == "sftp" && first {
			return hostOf(w)
		}
		return ""
	}
	if c == 0 || strings.ContainsRune(w[:c], '/') {
		return "" // a local path with a colon in it
	}
	return hostOf(w[:c])
}
