package policy

// fakeFiles is a Files backed by maps, counting Digest calls.
type fakeFiles struct {
	names   map[string][]FileID
	sums    map[FileID][32]byte
	digests int
}

func newFakeFiles() *fakeFiles {
	return &fakeFiles{names: map[string][]FileID{}, sums: map[FileID][32]byte{}}
}

func (f *fakeFiles) add(name string, id FileID) { f.names[name] = append(f.names[name], id) }

func (f *fakeFiles) Lookup(name string) []FileID { return f.names[name] }

func (f *fakeFiles) Digest(id FileID) ([32]byte, bool) {
	f.digests++
	s, ok := f.sums[id]
	return s, ok
}

// vouchingFiles is fakeFiles that also says which files the sandbox could
// not have put under their names (policy.Vouching).
type vouchingFiles struct {
	*fakeFiles
	planted map[FileID]bool // found only where the sandbox can write
}

func (v *vouchingFiles) LookupVouched(name string) []FileID {
	var out []FileID
	for _, id := range v.names[name] {
		if !v.planted[id] {
			out = append(out, id)
		}
	}
	return out
}
