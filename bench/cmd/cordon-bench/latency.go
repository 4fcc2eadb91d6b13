package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// latencyResult is the supervisor's own decision latency, as cordon reports
// it in the audit log (latency_us: from receiving the notification to
// answering it), per cordon build.
type latencyResult struct {
	Execs     int              `json:"execs"`
	FirstSeen int              `json:"first_seen_programs"`
	Variants  []*latencyByKind `json:"variants"`
}

type latencyByKind struct {
	Name string `json:"name"`
	// Seen is /bin/true executed again and again (its first exec left
	// out); First is one exec each of programs the supervisor has not seen
	// before (copies of /bin/true made in the sandbox's /tmp, new inodes).
	Seen  dist `json:"seen_us"`
	First dist `json:"first_seen_us"`
}

// firstSeenDir is where the sandboxed shell puts its copies: the sandbox's
// own /tmp, a tmpfs no earlier run has touched.
const firstSeenDir = "/tmp/cordon-bench-first"

// latencyScript runs $1 execs of /bin/true, then copies /bin/true $2 times
// (one tee and one chmod, so the copying adds two execs, not $2) and runs
// each copy once.
const latencyScript = `n=$1 m=$2 d=` + firstSeenDir + `
for ((i = 0; i < n; i++)); do /bin/true; done
mkdir -p "$d"
files=()
for ((i = 0; i < m; i++)); do files+=("$d/t$i"); done
if ((m > 0)); then
	tee "${files[@]}" </bin/true >/dev/null
	chmod +x "${files[@]}"
	for f in "${files[@]}"; do "$f"; done
fi`

func (h *harness) latency(res *results) error {
	r := &latencyResult{Execs: h.cfg.LatencyExecs, FirstSeen: h.cfg.FirstSeen}
	for _, v := range append([]variant{h.cordonV}, h.compare...) {
		k, err := h.latencyOf(v)
		if err != nil {
			return err
		}
		r.Variants = append(r.Variants, k)
		h.logf("decision latency, %s: seen median %.0f p99 %.0f µs; first seen median %.0f p99 %.0f µs",
			v.Name, k.Seen.Median, k.Seen.P99, k.First.Median, k.First.P99)
	}
	res.Latency = r
	return nil
}

func (h *harness) latencyOf(v variant) (*latencyByKind, error) {
	audit := filepath.Join(h.tmp, "audit-"+v.Name+".jsonl")
	_ = os.Remove(audit)
	vv := v
	vv.args = append(append([]string{}, v.args...), "--audit", audit)
	cmd := []string{"/bin/bash", "-c", latencyScript, "cordon-bench",
		strconv.Itoa(h.cfg.LatencyExecs + 1), strconv.Itoa(h.cfg.FirstSeen)}
	if _, err := h.measure(h.argv(vv, cmd), true); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(audit)
	if err != nil {
		return nil, fmt.Errorf("%s: the audit log: %w", v.Name, err)
	}
	seen, first, err := parseLatencies(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.Name, err)
	}
	if len(seen) > 0 {
		seen = seen[1:] // the first exec of /bin/true is a first-seen one
	}
	if len(seen) != h.cfg.LatencyExecs || len(first) != h.cfg.FirstSeen {
		return nil, fmt.Errorf("%s: the audit log holds %d execs of /bin/true after the first and %d of the copies, want %d and %d",
			v.Name, len(seen), len(first), h.cfg.LatencyExecs, h.cfg.FirstSeen)
	}
	return &latencyByKind{Name: v.Name, Seen: summarize(seen), First: summarize(first)}, nil
}

// parseLatencies reads latency_us of the allowed execs of /bin/true and of
// the copies in firstSeenDir from an audit log, in order.
func parseLatencies(raw []byte) (seen, first []float64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var rec struct {
			Kind      string `json:"kind"`
			Path      string `json:"path"`
			Decision  string `json:"decision"`
			LatencyUs *int64 `json:"latency_us"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, nil, fmt.Errorf("audit log: %w: %q", err, tail(sc.Text(), 200))
		}
		if rec.Kind != "exec" {
			continue
		}
		if rec.LatencyUs == nil {
			return nil, nil, fmt.Errorf("audit log: a record without latency_us: %q", tail(sc.Text(), 200))
		}
		if rec.Decision != "allow" {
			return nil, nil, fmt.Errorf("audit log: %s was not allowed (%s)", rec.Path, rec.Decision)
		}
		switch {
		case rec.Path == "/bin/true":
			seen = append(seen, float64(*rec.LatencyUs))
		case strings.HasPrefix(rec.Path, firstSeenDir+"/"):
			first = append(first, float64(*rec.LatencyUs))
		}
	}
	return seen, first, sc.Err()
}

func printLatency(b *bytes.Buffer, r *latencyResult) {
	if r == nil {
		return
	}
	fmt.Fprintf(b, "### decision latency: the audit log's `latency_us` (notification received → answered), µs\n\n")
	fmt.Fprintf(b, "| build | program | execs | median | p90 | p99 | max |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, v := range r.Variants {
		fmt.Fprintf(b, "| %s | /bin/true, seen before | %d | **%.0f** | %.0f | **%.0f** | %.0f |\n", v.Name, v.Seen.N, v.Seen.Median, v.Seen.P90, v.Seen.P99, v.Seen.Max)
		fmt.Fprintf(b, "| %s | first seen (a fresh copy of /bin/true) | %d | **%.0f** | %.0f | **%.0f** | %.0f |\n", v.Name, v.First.N, v.First.Median, v.First.P90, v.First.P99, v.First.Max)
	}
	b.WriteString("\n")
}

func startupLabel(name string) string {
	switch name {
	case "floor":
		return "floor: the C notify supervisor (bench/floor) in the same bwrap"
	case "bwrap":
		return "bwrap, no supervisor"
	}
	return name
}
