package supervisor

import (
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
)

// TestUnchangedNeedsEverythingEqual: the exec event keeps the check's
// decision only when every input of that decision is the same; each
// difference alone sends the exec to the full second judge.
func TestUnchangedNeedsEverythingEqual(t *testing.T) {
	id := policy.FileID{Dev: 1, Ino: 2, Size: 3, MtimeNs: 4, CtimeNs: 5}
	argv := []string{"/usr/bin/true", "x"}
	checked := func() Verdict {
		return Verdict{
			Exec:       policy.Exec{Argv: argv, Path: "true", Resolved: "/usr/bin/true", File: id, Known: true},
			Result:     policy.Result{Decision: policy.Allow},
			image:      id,
			imageKnown: true,
		}
	}
	img := func() target { return target{id: id, path: "/usr/bin/true", mapped: true} }
	tr := &tracer{}
	c, i := checked(), img()
	assert.True(t, tr.unchanged(&c, &i, argv), "the same exec")

	for _, tc := range []struct {
		name string
		ch   func(*Verdict, *target) []string
	}{
		{"mtime", func(_ *Verdict, i *target) []string { i.id.MtimeNs++; return argv }},
		{"ctime", func(_ *Verdict, i *target) []string { i.id.CtimeNs++; return argv }},
		{"size", func(_ *Verdict, i *target) []string { i.id.Size++; return argv }},
		{"inode", func(_ *Verdict, i *target) []string { i.id.Ino++; return argv }},
		{"path", func(_ *Verdict, i *target) []string { i.path = "/bin/true"; return argv }},
		{"no path", func(c *Verdict, i *target) []string { i.path, c.Exec.Resolved = "", ""; return argv }},
		{"writable", func(_ *Verdict, i *target) []string { i.writable = true; return argv }},
		{"argv", func(*Verdict, *target) []string { return []string{"/usr/bin/true", "y"} }},
		{"argv longer", func(*Verdict, *target) []string { return append(append([]string{}, argv...), "") }},
		{"script", func(c *Verdict, _ *target) []string { c.Expect = []string{"/bin/sh", "s"}; return argv }},
		{"interpreter", func(c *Verdict, _ *target) []string { c.Interpreter = []string{"/bin/sh"}; return argv }},
		{"image unknown", func(c *Verdict, _ *target) []string { c.imageKnown = false; return argv }},
		{"file unknown", func(c *Verdict, _ *target) []string { c.Exec.Known = false; return argv }},
		{"denied", func(c *Verdict, _ *target) []string { c.Result.Decision = policy.Deny; return argv }},
		{"volatile", func(c *Verdict, _ *target) []string { c.volatile = true; return argv }},
	} {
		c, i := checked(), img()
		kargv := tc.ch(&c, &i)
		assert.False(t, tr.unchanged(&c, &i, kargv), tc.name)
	}
	c, i = checked(), img()
	assert.False(t, (&tracer{follow: true}).unchanged(&c, &i, argv), "ptrace-only supervision has no check")
}
