package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/policy"
)

func writeProg(t *testing.T, path, content string) policy.FileID {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o755))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	return policy.FileID{Dev: st.Dev, Ino: st.Ino}
}

func sameFiles(ids []policy.FileID) [][2]uint64 {
	var out [][2]uint64
	for _, id := range ids {
		out = append(out, [2]uint64{id.Dev, id.Ino})
	}
	return out
}

// Lookup finds a name in every PATH directory, by a glob too, and skips a
// directory that is another by a second name (a symlink to it), without
// losing a file.
func TestLookupListsPathDirectories(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	require.NoError(t, os.Mkdir(a, 0o755))
	require.NoError(t, os.Mkdir(b, 0o755))
	require.NoError(t, os.Symlink(a, filepath.Join(base, "alias")))
	x1 := writeProg(t, filepath.Join(a, "prog"), "one")
	x2 := writeProg(t, filepath.Join(b, "prog"), "two")
	m1 := writeProg(t, filepath.Join(a, "mkfs.ext4"), "three")
	m2 := writeProg(t, filepath.Join(b, "mkfs.vfat"), "four")
	require.NoError(t, os.Mkdir(filepath.Join(b, "mkfs.dir"), 0o755)) // not a file: not an answer

	fs := newFiles(newSandboxView(0), filepath.Join(base, "alias")+":"+a+":"+b+":"+filepath.Join(base, "missing"))
	assert.Equal(t, [][2]uint64{{x1.Dev, x1.Ino}, {x2.Dev, x2.Ino}}, sameFiles(fs.Lookup("prog")))
	assert.Equal(t, [][2]uint64{{m1.Dev, m1.Ino}, {m2.Dev, m2.Ino}}, sameFiles(fs.Lookup("mkfs.*")))
	assert.Empty(t, fs.Lookup("absent"))
	// Where a file was found: the first PATH directory that holds it.
	assert.Equal(t, filepath.Join(base, "alias", "prog"), fs.where[[2]uint64{x1.Dev, x1.Ino}])

	// An absolute glob, elements matched one directory at a time.
	got := fs.expandNow(filepath.Join(base, "*", "mkfs.*"))
	want, err := filepath.Glob(filepath.Join(base, "*", "mkfs.*"))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// The dynamic loader's patterns expand as filepath.Glob expands them.
func TestExpandMatchesGlob(t *testing.T) {
	fs := newFiles(newSandboxView(0), "")
	for _, p := range []string{"/lib*/ld-*.so*", "/usr/lib/*-linux-*/ld-*.so*", "/usr/bin/mkfs.*", "/nonexistent/*/x"} {
		want, err := filepath.Glob(p)
		require.NoError(t, err)
		assert.Equal(t, want, fs.expandNow(p), p)
	}
}

// A directory listing is a snapshot: an answer built from one expires
// lookupTTL after the directory was read, not after the answer was made, so
// a program installed later is found within lookupTTL as before; and an
// expired listing is read again.
func TestLookupListingCannotOutliveTTL(t *testing.T) {
	dir := t.TempDir()
	fs := newFiles(newSandboxView(0), dir)
	assert.Empty(t, fs.Lookup("first")) // lists dir
	old := time.Now().Add(-lookupTTL + time.Second)
	fs.lists[dir].at = old

	// Installed after the listing: not seen yet (the listing is a
	// snapshot), and the answer is dated at the listing, so it expires
	// with it.
	id := writeProg(t, filepath.Join(dir, "later"), "x")
	assert.Empty(t, fs.Lookup("later"))
	assert.Equal(t, old, fs.lookups["later"].at)

	// Once the listing is older than lookupTTL, both are renewed.
	fs.lists[dir].at = time.Now().Add(-lookupTTL - time.Second)
	e := fs.lookups["later"]
	e.at = fs.lists[dir].at
	fs.lookups["later"] = e
	assert.Equal(t, [][2]uint64{{id.Dev, id.Ino}}, sameFiles(fs.Lookup("later")))

	// Replaced under the same name: a new inode, found once the answer
	// expires.
	require.NoError(t, os.Remove(filepath.Join(dir, "later")))
	id2 := writeProg(t, filepath.Join(dir, "later"), "y")
	e = fs.lookups["later"]
	e.at = time.Now().Add(-lookupTTL - time.Second)
	fs.lookups["later"] = e
	assert.Equal(t, [][2]uint64{{id2.Dev, id2.Ino}}, sameFiles(fs.Lookup("later")))
}

// expandNow runs expand as Lookup does, with the root open and f.mu held.
func (f *files) expandNow(pattern string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	root, err := unix.Open(f.rootPath(), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	at := time.Now()
	return f.expand(root, pattern, &at)
}

// A Lookup that cannot open the sandbox's root (its init is gone) is not an
// answer about the name: nothing is cached, so a later Lookup, once the
// root can be opened, looks again instead of taking "no such program".
func TestLookupWithoutRootCachesNothing(t *testing.T) {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	fs := newFiles(newSandboxView(cmd.Process.Pid), "/usr/bin:/bin")
	assert.Nil(t, fs.Lookup("true"))
	assert.Empty(t, fs.lookups)
	fs.rootPid = 0 // the host's root: a root that opens
	assert.NotEmpty(t, fs.Lookup("true"))
}

// A listing read on the host while the sandbox starts (Prelist) is taken
// for the very same directory only: the same path whose directory has
// another device or inode in the sandbox's view is read again. The listing
// keeps its own read time, so answers built from it expire as if the
// supervisor had read it.
func TestPrelistUsedOnlyForTheSameDirectory(t *testing.T) {
	dir := t.TempDir()
	id := writeProg(t, filepath.Join(dir, "prog"), "x")
	pol, err := policy.Compile(policy.Config{Default: policy.Allow, Rules: []policy.Rule{{Decision: policy.Deny, Pattern: "prog"}}})
	require.NoError(t, err)
	pre := Prelist(pol, dir)
	<-pre.done
	require.NotNil(t, pre.listing(dir), "the PATH directory was read")

	fs := newFiles(newSandboxView(0), dir)
	fs.pre = pre
	assert.Equal(t, [][2]uint64{{id.Dev, id.Ino}}, sameFiles(fs.Lookup("prog")))
	assert.Same(t, pre.listing(dir), fs.lists[dir], "the prelisted listing is taken")
	assert.Equal(t, pre.listing(dir).at, fs.lookups["prog"].at, "the answer is dated at the host's read")

	// The sandbox's dir is another directory (a tmpfs over it, say): the
	// prelisted names are not taken.
	other := newFiles(newSandboxView(0), dir)
	other.pre = &Prelisted{done: pre.done, lists: map[string]*dirListing{
		dir: {key: [2]uint64{1, 2}, names: map[string]struct{}{"ghost": {}}, at: time.Now()},
	}}
	assert.Empty(t, other.Lookup("ghost"))
	assert.NotEmpty(t, other.Lookup("prog"))
	assert.NotSame(t, other.pre.lists[dir], other.lists[dir])

	// Not finished yet: not waited for.
	slow := &Prelisted{done: make(chan struct{})}
	assert.Nil(t, slow.listing(dir))
	var none *Prelisted
	assert.Nil(t, none.listing(dir))
}

// Prelist reads what a lookup of the built-in programs reads, the loader's
// directories included, and its listings hold the same names as the
// directory (each once, without "." and "..").
func TestPrelistListsLoaderDirectories(t *testing.T) {
	pol, err := policy.Compile(policy.Config{Default: policy.Allow, Builtins: true})
	require.NoError(t, err)
	pre := Prelist(pol, "/usr/bin")
	<-pre.done
	want, err := filepath.Glob("/usr/lib*/ld-*.so*")
	require.NoError(t, err)
	if len(want) == 0 {
		t.Fatal("no dynamic loader under /usr/lib*: this test needs one")
	}
	l := pre.listing("/usr/lib64")
	if l == nil {
		l = pre.listing("/usr/lib")
	}
	require.NotNil(t, l, "a loader directory was listed")
	ents, err := os.ReadDir("/usr/bin")
	require.NoError(t, err)
	bin := pre.listing("/usr/bin")
	require.NotNil(t, bin)
	assert.Len(t, bin.all, len(ents))
	assert.Len(t, bin.names, len(ents))
	for _, e := range ents {
		assert.Contains(t, bin.names, e.Name())
	}
	assert.NotContains(t, bin.names, ".")
	assert.NotContains(t, bin.names, "..")
}

// match checks a name's literal prefix before filepath.Match: it finds
// what filepath.Match alone finds, escapes and classes included.
func TestListingMatchPrefix(t *testing.T) {
	names := []string{"ld-linux-x86-64.so.2", "xld-linux.so.2", "ld-", "libc.so.6", "a*b", "axb", "python3.12", "python3", "b1", "c1"}
	l := &dirListing{all: names}
	for _, pat := range []string{"ld-*.so*", `a\*b`, "a?b", "python3.*", "[bc]1", "*", "ld-"} {
		var want []string
		for _, n := range names {
			if ok, _ := filepath.Match(pat, n); ok {
				want = append(want, filepath.Join("/d", n))
			}
		}
		slices.Sort(want)
		assert.Equal(t, want, l.match("/d", pat), pat)
	}
	assert.Equal(t, []string{"/d/a*b"}, l.match("/d", `a\*b`))
}

// Prewarm gives the answers a first decision's Lookup would give, by the
// same code in the same root, dated when it read them; a supervisor
// adopts the cache only for the root, PATH, NeverRun and writable set it was
// made for, with what New would work out from them.
func TestPrewarmAnswersAsLookup(t *testing.T) {
	dir := t.TempDir()
	id := writeProg(t, filepath.Join(dir, "prog"), "x")
	pol, err := policy.Compile(policy.Config{Default: policy.Allow, Builtins: true, Rules: []policy.Rule{{Decision: policy.Deny, Pattern: "prog"}}})
	require.NoError(t, err)
	path := dir + ":/usr/bin:/bin"
	never := filepath.Join(t.TempDir(), "policy.yaml")
	nid := writeProg(t, never, "x")
	before := time.Now()
	w := Prewarm(pol, 0, Options{SearchPath: path, NeverRun: []string{never}, Writable: []string{dir}})
	<-w.done

	lazy := newFiles(newSandboxView(0), path)
	for _, n := range pol.Programs() {
		e, ok := w.fs.lookups[n]
		require.True(t, ok, "%s was looked up", n)
		assert.Equal(t, sameFiles(lazy.Lookup(n)), sameFiles(e.ids), n)
		assert.False(t, e.at.Before(before), "%s is dated at its read", n)
	}
	assert.Equal(t, [][2]uint64{{id.Dev, id.Ino}}, sameFiles(w.fs.lookups["prog"].ids))

	same := Options{SearchPath: path, NeverRun: []string{never}, Writable: []string{dir}}
	assert.Nil(t, w.adopt(1, same), "another root")
	for what, o := range map[string]Options{
		"another PATH":     {SearchPath: dir, NeverRun: same.NeverRun, Writable: same.Writable},
		"another NeverRun": {SearchPath: path, Writable: same.Writable},
		"another writable": {SearchPath: path, NeverRun: same.NeverRun, Writable: []string{dir, "/tmp"}},
	} {
		assert.Nil(t, w.adopt(0, o), what)
	}
	var none *Prewarmed
	assert.Nil(t, none.adopt(0, same))
	fs := w.adopt(0, same)
	require.NotNil(t, fs)
	// What New would have worked out from the same options.
	assert.Equal(t, neverRun([]string{never}), fs.neverRun)
	assert.True(t, fs.neverRun[[2]uint64{nid.Dev, nid.Ino}])
	assert.Equal(t, realWritable([]string{dir}), fs.writable)
	assert.Equal(t, [][2]uint64{{id.Dev, id.Ino}}, sameFiles(fs.Lookup("prog")))
}

// Trying to make a prewarmed answer stale: the program is replaced (a new
// file under its name) and a new program of a rule's name appears after
// the prewarm. The cached answers are what a lazy Lookup at the same
// moment would have cached, dated at the prewarm's read, so they expire
// lookupTTL after it, never later than a lazy answer; then the new files
// are found.
func TestPrewarmCannotOutliveTTL(t *testing.T) {
	dir := t.TempDir()
	old := writeProg(t, filepath.Join(dir, "prog"), "x")
	pol, err := policy.Compile(policy.Config{Default: policy.Allow, Rules: []policy.Rule{
		{Decision: policy.Deny, Pattern: "prog"}, {Decision: policy.Deny, Pattern: "later"}}})
	require.NoError(t, err)
	w := Prewarm(pol, 0, Options{SearchPath: dir})
	<-w.done
	warmed := time.Now()
	fs := w.adopt(0, Options{SearchPath: dir})
	require.NotNil(t, fs)

	require.NoError(t, os.Remove(filepath.Join(dir, "prog")))
	nu := writeProg(t, filepath.Join(dir, "prog"), "y")
	later := writeProg(t, filepath.Join(dir, "later"), "z")
	// Within lookupTTL of the read: the snapshot, as a lazy Lookup made
	// at the prewarm's moment would answer.
	assert.Equal(t, [][2]uint64{{old.Dev, old.Ino}}, sameFiles(fs.Lookup("prog")))
	assert.Empty(t, fs.Lookup("later"))
	for _, n := range []string{"prog", "later"} {
		assert.False(t, fs.lookups[n].at.After(warmed), "%s is dated no later than the prewarm", n)
	}
	// Aged past lookupTTL (the answers and the listing they came from):
	// the replaced and the new program are found.
	expired := time.Now().Add(-lookupTTL - time.Second)
	fs.lists[dir].at = expired
	for _, n := range []string{"prog", "later"} {
		e := fs.lookups[n]
		e.at = expired
		fs.lookups[n] = e
	}
	assert.Equal(t, [][2]uint64{{nu.Dev, nu.Ino}}, sameFiles(fs.Lookup("prog")))
	assert.Equal(t, [][2]uint64{{later.Dev, later.Ino}}, sameFiles(fs.Lookup("later")))
}
