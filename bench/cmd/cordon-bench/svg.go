package main

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
)

// series is one line of the overhead plot: a ratio at each concurrency.
type series struct {
	label, color, dash string
	pts                []point
}

type point struct {
	p             int
	med, min, max float64
}

// overheadSVG plots per-exec overhead ratios against the number of parallel
// exec loops: cordon over bwrap without a supervisor, wall and CPU, with the
// interquartile range over rounds as whiskers. Plain SVG, no dependencies.
func overheadSVG(r *results) string {
	levels := append([]*loopResult{}, r.Parallel...)
	if r.PerExec != nil {
		levels = append(levels, r.PerExec)
	}
	sort.Slice(levels, func(i, j int) bool { return levels[i].Parallel < levels[j].Parallel })
	palette := []string{"#7b3294", "#008837", "#e66101", "#5e3c99"}
	defs := []struct{ name, metric, label, color, dash string }{
		{"cordon/bwrap", "wall", "cordon / bwrap, wall", "#1f5fbf", ""},
		{"cordon/bwrap", "cpu", "cordon / bwrap, CPU", "#1f5fbf", "6 4"},
		{"cordon-strict/bwrap", "wall", "cordon --verify strict / bwrap, wall", "#c0392b", ""},
	}
	for i, v := range r.compareNames() {
		defs = append(defs, struct{ name, metric, label, color, dash string }{v + "/bwrap", "wall", v + " / bwrap, wall", palette[i%len(palette)], "2 3"})
	}
	var all []series
	for _, d := range defs {
		s := series{label: d.label, color: d.color, dash: d.dash}
		for _, l := range levels {
			if x := l.ratio(d.name, d.metric); x != nil && x.Median > 0 {
				s.pts = append(s.pts, point{l.Parallel, x.Median, x.Q1, x.Q3})
			}
		}
		if len(s.pts) > 0 {
			all = append(all, s)
		}
	}

	const W, H = 760, 420
	const left, right, top, bottom = 64, 250, 48, 56
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	maxP := 1
	lo, hi := 0.9, 1.3
	for _, s := range all {
		for _, p := range s.pts {
			maxP = max(maxP, p.p)
			lo, hi = math.Min(lo, p.min), math.Max(hi, p.max)
		}
	}
	step := niceStep(hi - lo)
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step)*step + step/2
	xOf := func(p int) float64 {
		if maxP <= 1 {
			return float64(left) + pw/2
		}
		return float64(left) + pw*math.Log2(float64(p))/math.Log2(float64(maxP))
	}
	yOf := func(v float64) float64 { return float64(top) + ph*(hi-v)/(hi-lo) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	mode := "full run"
	if r.Config.Quick {
		mode = "quick run"
	}
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">cordon per-exec overhead vs concurrency (%s)</text>`+"\n", left, mode)
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#555">%s</text>`+"\n", left,
		html.EscapeString(fmt.Sprintf("%d CPUs, kernel %s; ratio to bubblewrap with cordon's flags and no supervisor; whiskers: interquartile range over rounds", r.Machine.NProc, r.Machine.Kernel)))
	// Grid and y axis.
	for v := lo; v <= hi+1e-9; v += step {
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y, float64(left)+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.2f</text>`+"\n", left-6, y+4, v)
	}
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">ratio (1 = no overhead)</text>`+"\n", float64(top)+ph/2)
	// Reference lines: no overhead, and the bars.
	refs := []struct {
		v     float64
		label string
		color string
	}{{1.0, "1.00", "#888"}, {1.10, "bar at 32 loops: 1.10", "#c0392b"}, {1.08, "bar at 1 loop: 1.08", "#e67e22"}}
	for _, ref := range refs {
		if ref.v < lo || ref.v > hi {
			continue
		}
		y := yOf(ref.v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="3 3"/>`+"\n", left, y, float64(left)+pw, y, ref.color)
		switch {
		case ref.v > 1.09: // above its line, at the right
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="%s" font-size="10">%s</text>`+"\n", float64(left)+pw-4, y-3, ref.color, ref.label)
		case ref.v > 1.0: // below its line, at the left, clear of the one above
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="%s" font-size="10">%s</text>`+"\n", left+4, y+11, ref.color, ref.label)
		}
	}
	// X axis.
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", left, float64(top)+ph, float64(left)+pw, float64(top)+ph)
	for _, l := range levels {
		x := xOf(l.Parallel)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x, float64(top)+ph, x, float64(top)+ph+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x, float64(top)+ph+19, l.Parallel)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">parallel exec loops under one supervisor (log scale)</text>`+"\n", float64(left)+pw/2, H-12)
	// Series.
	for i, s := range all {
		var path []string
		for _, p := range s.pts {
			path = append(path, fmt.Sprintf("%.1f,%.1f", xOf(p.p), yOf(p.med)))
		}
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(path, " "), s.color, dash)
		for _, p := range s.pts {
			x := xOf(p.p) + float64(i-len(all)/2)*3 // keep whiskers apart
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-opacity="0.5"/>`+"\n", x, yOf(p.min), x, yOf(p.max), s.color)
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s, %d loops: %.2f (%.2f-%.2f)</title></circle>`+"\n",
				xOf(p.p), yOf(p.med), s.color, html.EscapeString(s.label), p.p, p.med, p.min, p.max)
		}
		ly := top + 10 + i*20
		lx := W - right + 16
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+26, ly, s.color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+32, ly+4, html.EscapeString(s.label))
	}
	if len(all) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">no per-exec measurements in this run</text>`+"\n", float64(left)+pw/2, float64(top)+ph/2)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceStep picks a grid step giving about six lines over span.
func niceStep(span float64) float64 {
	for _, s := range []float64{0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10} {
		if span/s <= 8 {
			return s
		}
	}
	return 20
}

// compareNames lists the -compare variants that appear in the results.
func (r *results) compareNames() []string {
	known := map[string]bool{"bare": true, "bwrap": true, "cordon": true, "cordon-strict": true}
	var out []string
	seen := map[string]bool{}
	levels := append([]*loopResult{r.PerExec}, r.Parallel...)
	for _, l := range levels {
		if l == nil {
			continue
		}
		for _, v := range l.Variants {
			if !known[v.Name] && !seen[v.Name] {
				seen[v.Name] = true
				out = append(out, v.Name)
			}
		}
	}
	return out
}
