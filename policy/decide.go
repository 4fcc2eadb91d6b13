package policy

import "strings"

// maxUnwrap bounds how many wrappers (loader, multi-call program, python -m)
// Decide looks through for one exec: ld.so ld.so ld.so ... ends there, and
// an exec that nests more is denied (UnwrapRule): what it runs is unknown.
const maxUnwrap = 8

// UnwrapRule is the rule a Decide result names when an exec nests more
// wrappers than Decide looks through. It is not a rule of the policy: no
// rule, default or override lifts it.
var UnwrapRule = Rule{
	Decision: Deny,
	Pattern:  "too many wrapper levels",
	Message:  "more than 8 dynamic loaders, multi-call programs or python -m nested in one exec",
	Source:   "builtin",
}

// decider holds the state of one Decide call. It lives on the stack.
type decider struct {
	p   *Policy
	top *Exec // the exec as the supervisor saw it: its File is the real one
	// best and rule are the strongest match so far (rankNone: none).
	best rank
	rule int32
	// denyOnly restricts matching to deny and ask rules while set.
	denyOnly bool
	// forced, when set, is a built-in rule that denies whatever the rules
	// say: something the exec runs could not be decided (fail closed), or
	// it nests more than maxUnwrap wrappers.
	forced *Rule
	// sum caches the digest of top's file: 0 not computed, 1 ok, 2 failed.
	sumState uint8
	sum      [32]byte
	// unpinned says top is a program the dynamic loader maps itself, after
	// the exec: nothing refuses writers to it while it runs, as the kernel
	// does for the image it maps, so its content at the decision is no
	// proof of what runs, and a copy of a program is that program there for
	// its deny and ask rules only (see sameOrUnknown).
	unpinned bool
	// planted says an allow rule naming the program did not apply because
	// the file is one the sandbox could have put on its PATH (Vouching):
	// a default deny then names PlantedRule, which says so.
	planted bool
}

// better reports whether a matcher of rank r for rule i would replace the
// current best: strictly stronger, or as strong and earlier in the policy.
func (d *decider) better(r rank, i int32) bool {
	if d.denyOnly && (r == rankAllow || r == rankOverride) {
		return false
	}
	return r > d.best || (r == d.best && i < d.rule)
}

// tooDeep reports, and records, that a wrapper at depth would be one level
// more than Decide looks through.
func (d *decider) tooDeep(depth int) bool {
	if depth >= maxUnwrap {
		d.forced = &UnwrapRule
		return true
	}
	return false
}

// exec decides e, which is top or something top turned out to run.
func (d *decider) exec(e *Exec, depth int) {
	// A known file is named by its resolved path alone: without one (a
	// memfd, a deleted file, a path longer than the kernel renders) it
	// has no name, and is decided by identity; the path called, the
	// caller's string, only adds deny and ask rules (calledAs).
	prog := e.Resolved
	if prog == "" && !e.Known {
		prog = e.Path
	}
	prog = cleanAbs(prog)
	base := baseName(prog)
	identity := e == d.top && d.p.files != nil && e.Known

	if isLoaderName(base) || (identity && d.sameAsAny(loaderPaths)) {
		if d.tooDeep(depth) {
			return
		}
		// Rules naming the loader itself still apply.
		d.named(base, prog, e.Argv, false)
		if i := loaderTarget(e.Argv); i > 0 {
			// What the loader runs may deny, never allow, when the file
			// is only named like the loader or is a copy the sandbox could
			// have put there (a planted ld-linux*.so.2 is not the loader),
			// or when its options load code of the caller's choosing
			// into the program (--preload: a rule allowing the loader
			// with them must).
			if (identity && !d.sameVouchedAny(loaderPaths)) || loaderLoads(e.Argv[:i]) {
				was := d.denyOnly
				d.denyOnly = true
				defer func() { d.denyOnly = was }()
			}
			target := e.Argv[i]
			argv := e.Argv[i:]
			if a0 := loaderArgv0(e.Argv[:i]); a0 != "" {
				argv = append([]string{a0}, e.Argv[i+1:]...)
			}
			sub := &Exec{Argv: argv, Path: target, Resolved: target}
			if r, ok := d.p.files.(Resolver); ok && identity {
				got, ok := r.Resolve(target)
				if !ok {
					d.forced = &LoaderRule
					return
				}
				if d.p.denyWritable && got.Writable {
					d.forced = &WritableRule
					return
				}
				sub.File, sub.Known, sub.Resolved, sub.Writable = got.File, got.Known, got.Resolved, got.Writable
			}
			if sub.Known {
				// The loaded program is what really runs: decide it by
				// identity too, as the top exec for the rest of the walk.
				top, state, sum, unpinned := d.top, d.sumState, d.sum, d.unpinned
				d.top, d.sumState, d.unpinned = sub, 0, true
				d.exec(sub, depth+1)
				d.top, d.sumState, d.sum, d.unpinned = top, state, sum, unpinned
			} else {
				d.exec(sub, depth+1)
			}
		}
		return
	}
	if mc, proven := d.multiCallOf(base, identity); mc != nil {
		if d.tooDeep(depth) {
			return
		}
		d.multiCall(e, mc, proven, base, prog, identity, depth)
		return
	}
	d.named(base, prog, e.Argv, identity)
	d.calledAs(e, base, prog, false)
	if isPython(base) || identity {
		// A Python interpreter under any name runs python -m MOD: known by
		// its name, or by identity (a renamed copy of python3).
		if mod, argv := pythonModule(e.Argv); mod != "" && (isPython(base) || d.sameAsAny(pythonNames)) {
			if d.tooDeep(depth) {
				return
			}
			// MOD's own rules may deny or ask, never allow: python looks
			// MOD up in the working directory and PYTHONPATH first, where
			// the workload can put any ls.py (allow python itself, or
			// "python3 -m pip ...", to allow it).
			was := d.denyOnly
			d.denyOnly = true
			d.exec(&Exec{Argv: argv, Path: mod}, depth+1)
			// "python -m runpy MOD" runs MOD as __main__ (runpy's own
			// main), so it is decided as MOD too, nesting counted.
			for mod == "runpy" && len(argv) > 1 {
				depth++
				if d.tooDeep(depth) {
					return
				}
				argv = argv[1:]
				mod = argv[0]
				if k := strings.IndexByte(mod, '.'); k >= 0 {
					mod = mod[:k]
				}
				d.exec(&Exec{Argv: argv, Path: mod}, depth+1)
			}
			d.denyOnly = was
		}
	}
	if identity && d.best < rankFinal {
		d.identify(base, e.Argv, nil)
	}
	if identity && d.p.byName["ssh"] != nil && !sshCarriers[base] {
		// A renamed copy of scp, sftp or rsync still connects where its
		// arguments say.
		for _, c := range sshCarrierList {
			if d.same(c) {
				d.remoteHosts(c, e.Argv)
			}
		}
	}
}

// multiCallOf returns the multi-call program e's file is, and whether that
// is proven. By name alone (no file identity) the name is all there is, and
// counts as proof; with identity, only the same file as, or a copy of, the
// program on the sandbox's PATH is proven: a file merely named busybox or
// systemctl may be anything.
func (d *decider) multiCallOf(base string, identity bool) (*multiCallProg, bool) {
	mc := multiCallNamed(base)
	if !identity {
		return mc, mc != nil
	}
	if mc != nil {
		return mc, d.sameVouched(mc.name)
	}
	for i := range multiCall {
		if d.same(multiCall[i].name) {
			// A copy the sandbox made under the name is no proof.
			return &multiCall[i], d.sameVouched(multiCall[i].name)
		}
	}
	return nil, false
}

// multiCall decides e, whose file is the multi-call program mc: as what the
// name it was started as says. argv[0] is trusted only here, and only when
// the file is proven to be mc, since then argv[0] is what chooses the
// program; every other name still counts for deny and ask rules:
//   - started as an applet, the applet is decided fully; rules naming the
//     file (its name, its path, its identity as mc) and the path it was
//     called by may only deny or ask;
//   - started as itself (systemctl --version, busybox --list), its own
//     rules decide, and no applet's: reboot being a symlink to systemctl
//     does not make every systemctl reboot.
//
// A file that is not proven to be mc is decided as the program it is, with
// the applet argv[0] names as a deny-only extra.
func (d *decider) multiCall(e *Exec, mc *multiCallProg, proven bool, base, prog string, identity bool, depth int) {
	applet, argv, self := mc.applet(e.Argv)
	was := d.denyOnly
	if !self && proven {
		d.denyOnly = true
	}
	d.named(base, prog, e.Argv, identity)
	d.calledAs(e, base, prog, true)
	if identity && d.best < rankFinal {
		if proven {
			d.identify(base, e.Argv, mc)
		} else {
			d.identify(base, e.Argv, nil)
		}
	}
	d.denyOnly = was || self || !proven
	if applet != "" {
		d.exec(&Exec{Argv: argv, Path: applet}, depth+1)
	}
	d.denyOnly = was
}

// calledAs runs the deny and ask rules that name the path the exec was
// called by, when it differs from the resolved one: a symlink python3 to
// python3.12 still meets "deny: python3 -c". Allow rules never match this
// way: whoever made the symlink chose its name. For a multi-call program
// the name is also tried as it would pick an applet, without a leading
// dash (a symlink -reboot to busybox).
func (d *decider) calledAs(e *Exec, base, prog string, multi bool) {
	if e.Path == "" {
		return
	}
	called := cleanAbs(e.Path)
	if called == prog {
		return
	}
	was := d.denyOnly
	d.denyOnly = true
	cb := baseName(called)
	if cb != base {
		d.byBase(cb, e.Argv)
	}
	if a := startedAs(cb); multi && a != cb && a != base {
		d.byBase(a, e.Argv)
	}
	d.byPath(called, e.Argv)
	d.denyOnly = was
}

// pythonNames are the names, for Files.Lookup, whose files are Python
// interpreters.
var pythonNames = []string{"python3", "python", "python3.*"}

// named runs the rules that name the program by base name or path.
//
// With identity (the exec's file is known), an allow rule naming the
// program by its base name allows only the program of that name on the
// sandbox's PATH, or a copy of it: a file merely named ls (python copied to
// ./ls) is not ls. Such a file still meets the name's deny and ask rules.
// Rules naming a path match the resolved path, which is the file itself.
func (d *decider) named(base, prog string, argv []string, identity bool) {
	if identity && !d.denyOnly {
		best, rule := d.best, d.rule
		d.byBase(base, argv)
		// A name with glob characters would be looked up as a pattern
		// (p* stands for perl and python3): nothing on the PATH vouches
		// for it.
		literal := !strings.ContainsAny(base, "*?[\\")
		if (d.best != best || d.rule != rule) && (d.best == rankAllow || d.best == rankOverride) && !(literal && d.sameVouched(base)) {
			d.planted = d.planted || (literal && d.same(base))
			d.best, d.rule = best, rule
			d.denyOnly = true
			d.byBase(base, argv)
			d.denyOnly = false
		}
	} else {
		d.byBase(base, argv)
	}
	d.byPath(prog, argv)
	if sshCarriers[base] {
		d.remoteHosts(base, argv)
	}
}

// byBase runs the rules naming base, literally or by a glob.
func (d *decider) byBase(base string, argv []string) {
	if pr := d.p.byName[base]; pr != nil {
		var (
			kbuf [maxStackArgs]uint8
			pbuf [maxStackArgs]int32
			ebuf [maxStackArgs]int16
		)
		v := toolArgs(pr.tool, argv)
		a := parseArgs(pr.tool, v, kbuf[:0], pbuf[:0], ebuf[:0])
		if !a.abbrevVal {
			d.progArgs(pr, &a, nil)
		} else {
			// An abbreviated option was read as taking a value; the
			// program may read it as a flag instead (see valueOpt).
			b := parseArgsExact(pr.tool, v, nil, nil, nil)
			d.progArgs(pr, &a, &b)
		}
	}
	for i := range d.p.globs {
		if d.p.globs[i].g.match(base) {
			d.run(d.p.globs[i].matchers, argv)
		}
	}
}

// progArgs runs the rules of one program on its classified arguments. b,
// when not nil, is the other reading of the same arguments (see
// args.abbrevVal): a deny or ask rule matches when either reading does,
// an allow rule only when both do.
func (d *decider) progArgs(pr *progRules, a, b *args) {
	if len(a.pos) > 0 {
		d.runArgs(pr.bySub[a.sub], a, b)
	}
	if b != nil && len(b.pos) > 0 && (len(a.pos) == 0 || b.sub != a.sub) {
		was := d.denyOnly
		d.denyOnly = true
		d.runArgs(pr.bySub[b.sub], b, nil)
		d.denyOnly = was
	}
	d.runArgs(pr.other, a, b)
	if pr.tool.gitLike && len(a.pos) > 0 && !gitCommands()[a.sub] {
		d.gitAutocorrect(pr, a)
	}
}

// byPath runs the rules naming the absolute path prog, literally or by a
// glob.
func (d *decider) byPath(prog string, argv []string) {
	if !strings.HasPrefix(prog, "/") {
		return
	}
	for i := range d.p.paths {
		if d.p.paths[i].g.match(prog) {
			d.run(d.p.paths[i].matchers, argv)
		}
	}
}

// identify runs the rules of every program the executable is the same file
// as, or a copy of. A program is looked up only if one of its rules could
// change the decision. For a file proven to be the multi-call program mc,
// only rules naming mc itself count: other names that are the same file
// (reboot, a symlink to systemctl) are its applets, decided by the name it
// was started as, not by what it is.
func (d *decider) identify(base string, argv []string, mc *multiCallProg) {
	for i := range d.p.ident {
		e := &d.p.ident[i]
		if e.name == base || e.max <= d.best {
			continue
		}
		if d.best == rankNone && e.max == rankAllow && d.p.def == Allow {
			continue // it could only restate the default
		}
		if mc != nil && !mc.own(baseName(e.name)) {
			continue
		}
		same, unknown := d.sameOrUnknown(d.p.files.Lookup(e.name))
		switch {
		case same && (d.denyOnly || d.sameVouched(e.name)):
			d.run(e.matchers, argv)
		case same || unknown:
			// The same file as, or a copy of, a file the sandbox could
			// have put under the name; or a file of the same size as
			// one whose content could not be compared (Digest had no
			// answer: a file too large, unreadable, or on a filesystem
			// whose content cordon cannot take for what runs): its deny
			// and ask rules only, never its allows (fail closed).
			was := d.denyOnly
			d.denyOnly = true
			d.run(e.matchers, argv)
			d.denyOnly = was
		}
	}
}

// sameVouchedAny is sameAsAny for an allow (see sameVouched).
func (d *decider) sameVouchedAny(names []string) bool {
	for _, n := range names {
		if d.sameVouched(n) {
			return true
		}
	}
	return false
}

// sameAsAny reports whether the top exec's file is one of names' files.
func (d *decider) sameAsAny(names []string) bool {
	for _, n := range names {
		if d.same(n) {
			return true
		}
	}
	return false
}

// same reports whether the top exec's file is a file name stands for, or has
// the same content as one. Content is compared only for files of equal size.
func (d *decider) same(name string) bool {
	return d.sameAs(d.p.files.Lookup(name))
}

// sameVouched is same for an allow: only the files the sandbox could not
// have put under name count as name (see Vouching).
func (d *decider) sameVouched(name string) bool {
	if v, ok := d.p.files.(Vouching); ok {
		return d.sameAs(v.LookupVouched(name))
	}
	return d.same(name)
}

func (d *decider) sameAs(ids []FileID) bool {
	same, _ := d.sameOrUnknown(ids)
	return same
}

// sameOrUnknown reports whether the top exec's file is one of ids or has
// the same content as one, and, when it is not found to be, whether that
// is unknown: a file of the same size whose content, or the top file's,
// Digest could not read, or one with the same content that is unpinned (a
// red team rewrote a copy of ls run as ld.so's program, from a second
// sandbox, while it ran: its own code ran under an allowlist of ls).
func (d *decider) sameOrUnknown(ids []FileID) (same, unknown bool) {
	f := d.top.File
	for _, id := range ids {
		if id.Same(f) {
			return true, false
		}
	}
	for _, id := range ids {
		if id.Size != f.Size {
			continue
		}
		if d.sumState == 0 {
			d.sumState = 2
			if s, ok := d.p.files.Digest(f); ok {
				d.sum, d.sumState = s, 1
			}
		}
		if d.sumState != 1 {
			unknown = true
			continue
		}
		s, ok := d.p.files.Digest(id)
		if ok && s == d.sum {
			if d.unpinned {
				return false, true
			}
			return true, false
		}
		unknown = unknown || !ok
	}
	return false, unknown
}

// run evaluates matchers against argv, classifying argv once per option
// table.
func (d *decider) run(ms []int32, argv []string) {
	var (
		kbuf [maxStackArgs]uint8
		pbuf [maxStackArgs]int32
		ebuf [maxStackArgs]int16
		a    args
		t    *tool
	)
	for _, mi := range ms {
		m := &d.p.matchers[mi]
		if !d.better(m.rank, m.rule) {
			continue
		}
		if m.tool != t {
			t = m.tool
			a = parseArgs(t, toolArgs(t, argv), kbuf[:0], pbuf[:0], ebuf[:0])
		}
		ok := m.match(&a)
		if a.abbrevVal {
			// The other reading of an abbreviated option (see progArgs).
			b := parseArgsExact(t, toolArgs(t, argv), nil, nil, nil)
			if m.rank == rankAllow || m.rank == rankOverride {
				ok = ok && m.match(&b)
			} else {
				ok = ok || m.match(&b)
			}
		}
		if ok {
			d.best, d.rule = m.rank, m.rule
		}
	}
}

// runArgs evaluates matchers against arguments already classified, and
// against b, the other reading of them, when not nil (see progArgs).
func (d *decider) runArgs(ms []int32, a, b *args) {
	for _, mi := range ms {
		m := &d.p.matchers[mi]
		if !d.better(m.rank, m.rule) {
			continue
		}
		ok := m.match(a)
		if b != nil {
			if m.rank == rankAllow || m.rank == rankOverride {
				ok = ok && m.match(b)
			} else {
				ok = ok || m.match(b)
			}
		}
		if ok {
			d.best, d.rule = m.rank, m.rule
		}
	}
}

// toolArgs returns the arguments of argv as program t interprets them.
func toolArgs(t *tool, argv []string) []string {
	if t.gitLike {
		return gitArgs(argv)
	}
	if t.host {
		return sshArgs(t, argv)
	}
	if len(argv) == 0 {
		return nil
	}
	return argv[1:]
}
