package policy

import "strings"

// maxUnwrap bounds how many wrappers (loader, multi-call binary, python -m)
// Decide looks through for one exec: ld.so ld.so ld.so ... ends there.
const maxUnwrap = 8

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
	// say: something the exec runs could not be decided (fail closed).
	forced *Rule
	// sum caches the digest of top's file: 0 not computed, 1 ok, 2 failed.
	sumState uint8
	sum      [32]byte
}

// better reports whether a matcher of rank r for rule i would replace the
// current best: strictly stronger, or as strong and earlier in the policy.
func (d *decider) better(r rank, i int32) bool {
	if d.denyOnly && (r == rankAllow || r == rankOverride) {
		return false
	}
	return r > d.best || (r == d.best && i < d.rule)
}

// exec decides e, which is top or something top turned out to run.
func (d *decider) exec(e *Exec, depth int) {
	prog := cleanAbs(e.Program())
	base := baseName(prog)
	identity := e == d.top && d.p.files != nil && e.Known

	if depth < maxUnwrap {
		if isLoaderName(base) || (identity && d.sameAsAny(loaderPaths)) {
			// Rules naming the loader itself still apply.
			d.named(base, prog, e.Argv)
			if i := loaderTarget(e.Argv); i > 0 {
				target := e.Argv[i]
				sub := &Exec{Argv: e.Argv[i:], Path: target, Resolved: target}
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
					top, state, sum := d.top, d.sumState, d.sum
					d.top, d.sumState = sub, 0
					d.exec(sub, depth+1)
					d.top, d.sumState, d.sum = top, state, sum
				} else {
					d.exec(sub, depth+1)
				}
			}
			return
		}
		if multiCallName(base) != "" || (identity && d.sameAsAny(multiCall)) {
			d.named(base, prog, e.Argv)
			if applet, argv := multiCallApplet(e.Argv); applet != "" {
				d.exec(&Exec{Argv: argv, Path: applet}, depth+1)
			}
			return
		}
	}
	d.named(base, prog, e.Argv)
	d.calledAs(e, base, prog)
	if depth < maxUnwrap && isPython(base) {
		if mod, argv := pythonModule(e.Argv); mod != "" {
			d.exec(&Exec{Argv: argv, Path: mod}, depth+1)
		}
	}
	if identity && d.best < rankOverride {
		d.identify(base, e.Argv)
	}
}

// calledAs runs the deny and ask rules that name the path the exec was
// called by, when it differs from the resolved one: a symlink python3 to
// python3.12 still meets "deny: python3 -c". Allow rules never match this
// way: whoever made the symlink chose its name.
func (d *decider) calledAs(e *Exec, base, prog string) {
	if e.Path == "" {
		return
	}
	called := cleanAbs(e.Path)
	if called == prog {
		return
	}
	d.denyOnly = true
	if cb := baseName(called); cb != base {
		d.byBase(cb, e.Argv)
	}
	d.byPath(called, e.Argv)
	d.denyOnly = false
}

// named runs the rules that name the program by base name or path.
func (d *decider) named(base, prog string, argv []string) {
	d.byBase(base, argv)
	d.byPath(prog, argv)
}

// byBase runs the rules naming base, literally or by a glob.
func (d *decider) byBase(base string, argv []string) {
	if pr := d.p.byName[base]; pr != nil {
		var (
			kbuf [maxStackArgs]uint8
			pbuf [maxStackArgs]int32
			ebuf [maxStackArgs]int16
		)
		a := parseArgs(pr.tool, toolArgs(pr.tool, argv), kbuf[:0], pbuf[:0], ebuf[:0])
		if len(a.pos) > 0 {
			d.runArgs(pr.bySub[a.sub], &a)
		}
		d.runArgs(pr.other, &a)
	}
	for i := range d.p.globs {
		if d.p.globs[i].g.match(base) {
			d.run(d.p.globs[i].matchers, argv)
		}
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
// change the decision.
func (d *decider) identify(base string, argv []string) {
	for i := range d.p.ident {
		e := &d.p.ident[i]
		if e.name == base || e.max <= d.best {
			continue
		}
		if d.best == rankNone && e.max == rankAllow && d.p.def == Allow {
			continue // it could only restate the default
		}
		if d.same(e.name) {
			d.run(e.matchers, argv)
		}
	}
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
	f := d.top.File
	ids := d.p.files.Lookup(name)
	for _, id := range ids {
		if id.Same(f) {
			return true
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
			return false
		}
		if s, ok := d.p.files.Digest(id); ok && s == d.sum {
			return true
		}
	}
	return false
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
		if m.match(&a) {
			d.best, d.rule = m.rank, m.rule
		}
	}
}

// runArgs evaluates matchers against arguments already classified.
func (d *decider) runArgs(ms []int32, a *args) {
	for _, mi := range ms {
		m := &d.p.matchers[mi]
		if d.better(m.rank, m.rule) && m.match(a) {
			d.best, d.rule = m.rank, m.rule
		}
	}
}

// toolArgs returns the arguments of argv as program t interprets them.
func toolArgs(t *tool, argv []string) []string {
	if t.gitLike {
		return gitArgs(argv)
	}
	if len(argv) == 0 {
		return nil
	}
	return argv[1:]
}
