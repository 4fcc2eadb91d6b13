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
