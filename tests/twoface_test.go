package tests

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestAdvTwoFacedFile: a file whose reads depend on who reads
// (testdata/adversarial/twoface.c, a FUSE server: cordon's supervisor gets
// one program, the kernel's exec another, reads skipping the page cache).
// A red team ran rm so under --deny rm (cordon hashed zeros) and under an
// allowlist of ls (cordon hashed ls), deterministically. A process outside
// the sandbox serves such a file; cordon cannot take the content it reads
// there for what runs, so it compares none: a file of a named program's
// size whose content it cannot prove is that program for its deny rules,
// never for its allows.
func TestAdvTwoFacedFile(t *testing.T) {
	requireSeccompNotify(t)
	if os.Geteuid() != 0 {
		testcap.SkipOrFail(t, "mounting the FUSE server needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testcap.SkipOrFail(t, "no /dev/fuse: %v", err)
	}
	dir := t.TempDir()
	server := buildC(t, dir, "twoface.c", "twoface")
	ls, err := os.ReadFile("/bin/ls")
	require.NoError(t, err)
	rm, err := os.ReadFile("/bin/rm")
	require.NoError(t, err)
	zeros := filepath.Join(dir, "zeros")
	require.NoError(t, os.WriteFile(zeros, make([]byte, len(rm)), 0o644))

	for _, tc := range []struct {
		name, cordonSees string
		args             []string
		denial           string
	}{
		{"denylist: cordon reads zeros", zeros, []string{"--deny", "rm"}, `rule: deny "rm"`},
		{"allowlist: cordon reads ls", "/bin/ls", []string{"--default", "deny", "--allow", "sh", "--allow", "ls"}, "rule: default deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Under /var/tmp: the sandbox's /tmp is its own.
			mnt, err := os.MkdirTemp("/var/tmp", "cordon-twoface-")
			require.NoError(t, err)
			t.Cleanup(func() { os.Remove(mnt) })
			mountTwoFace(t, server, mnt, tc.cordonSees, "/bin/rm")
			prog := filepath.Join(mnt, "prog")
			// Outside cordon the file is rm (the test proves nothing if not).
			b, err := os.ReadFile(prog)
			require.NoError(t, err)
			want := rm
			if tc.cordonSees == "/bin/ls" {
				want = append(append([]byte{}, rm...), make([]byte, len(ls)-len(rm))...)
			}
			require.Equal(t, want, b, "the kernel's side of the file is not rm")

			work := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(work, "victim"), nil, 0o644))
			args := append(tc.args, "--", "sh", "-c", prog+" victim; echo rc=$?; [ -e victim ] && echo victim kept")
			r := runCordon(t, runOpts{dir: work}, args...)
			assert.Contains(t, r.stdout, "victim kept\n", "rm ran: %s", r.stderr)
			assert.Contains(t, r.stdout, "rc=126\n", r.stderr)
			assert.Contains(t, r.stderr, tc.denial, r.stderr)
		})
	}
}

// mountTwoFace starts the twoface server on mnt, serving a for cordon and b
// for everyone else, and unmounts it when the test ends.
func mountTwoFace(t *testing.T, server, mnt, a, b string) {
	t.Helper()
	if st, err := os.Stat(a); err == nil {
		if bt, err := os.Stat(b); err == nil && bt.Size() > st.Size() {
			require.Failf(t, "twoface", "%s is larger than %s: it would be cut", b, a)
		}
	}
	cmd := exec.Command(server, mnt, a, b)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = unix.Unmount(mnt, unix.MNT_DETACH)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the FUSE server did not start")
	require.Equal(t, "ready\n", line)
}

// TestAdvLoopBackedCopy: a filesystem on a loop device reads from a file
// that can be written directly, without a write through the filesystem: a
// page of a program evicted after its exec event is read again from the
// rewritten backing file when it faults in. A red team ran its own code so
// as a copy of ls under an allowlist of ls (an ext4 image the sandbox could
// write, mounted by the host). cordon compares no content on such a device:
// the copy of ls is not ls there (refused as the default denies), and a
// copy of rm is still rm for --deny rm (its size, content unproven).
func TestAdvLoopBackedCopy(t *testing.T) {
	requireSeccompNotify(t)
	if os.Geteuid() != 0 {
		testcap.SkipOrFail(t, "setting up a loop device needs root")
	}
	t.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin:/sbin")
	mkfs, losetup := requireTool(t, "mkfs.ext4"), requireTool(t, "losetup")
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testcap.SkipOrFail(t, "no loop devices: %v", err)
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	require.NoError(t, os.WriteFile(img, nil, 0o644))
	require.NoError(t, os.Truncate(img, 16<<20))
	out, err := exec.Command(mkfs, "-q", "-F", img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(losetup, "-f", "--show", img).Output()
	require.NoError(t, err)
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command(losetup, "-d", loop).Run() })
	mnt, err := os.MkdirTemp("/var/tmp", "cordon-loop-") // the sandbox's /tmp is its own
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(mnt) })
	require.NoError(t, unix.Mount(loop, mnt, "ext4", 0, ""))
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	for _, p := range []string{"ls", "rm"} {
		b, err := os.ReadFile("/bin/" + p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(mnt, p), b, 0o755))
	}

	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "victim"), nil, 0o644))
	r := runCordon(t, runOpts{dir: work}, "--default", "deny", "--allow", "sh", "--allow", "ls", "--", "sh", "-c",
		"/bin/ls -d /; echo ls=$?; "+mnt+"/ls -d /; echo copy=$?")
	assert.Contains(t, r.stdout, "ls=0\n", "the real ls is allowed: %s", r.stderr)
	assert.Contains(t, r.stdout, "copy=126\n", "a copy of ls on a loop device was taken for ls: %s", r.stderr)
	assert.Contains(t, r.stderr, mnt+"/ls -d / (rule: default deny", r.stderr)

	r = runCordon(t, runOpts{dir: work}, "--deny", "rm", "--", "sh", "-c", mnt+"/rm victim; echo rc=$?; [ -e victim ] && echo victim kept")
	assert.Contains(t, r.stdout, "victim kept\n", "rm ran: %s", r.stderr)
	assert.Contains(t, r.stderr, `rule: deny "rm"`, r.stderr)
}

// TestAdvOverlayCopy: a program run from overlayfs is refused writers
// (ETXTBSY) as the overlay's file, but the layer's file its pages are read
// from can still be written through its own path: a red team rewrote a
// copy of ls's code in the lower layer while it ran (from a second
// sandbox that could write the layer), and its own code ran under an
// allowlist of ls. cordon compares no content on overlayfs: the copy is
// not ls there.
func TestAdvOverlayCopy(t *testing.T) {
	requireSeccompNotify(t)
	if os.Geteuid() != 0 {
		testcap.SkipOrFail(t, "mounting an overlay needs root")
	}
	dir := t.TempDir()
	lower, lower2 := filepath.Join(dir, "lo"), filepath.Join(dir, "lo2")
	require.NoError(t, os.Mkdir(lower, 0o755))
	require.NoError(t, os.Mkdir(lower2, 0o755))
	b, err := os.ReadFile("/bin/ls")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(lower, "ls"), b, 0o755))
	mnt, err := os.MkdirTemp("/var/tmp", "cordon-overlay-") // the sandbox's /tmp is its own
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(mnt) })
	if err := unix.Mount("overlay", mnt, "overlay", unix.MS_RDONLY, "lowerdir="+lower+":"+lower2); err != nil {
		testcap.SkipOrFail(t, "mounting an overlay: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })

	r := runCordon(t, runOpts{dir: t.TempDir()}, "--default", "deny", "--allow", "sh", "--allow", "ls", "--", "sh", "-c",
		"/bin/ls -d /; echo ls=$?; "+mnt+"/ls -d /; echo copy=$?")
	assert.Contains(t, r.stdout, "ls=0\n", "the real ls is allowed: %s", r.stderr)
	assert.Contains(t, r.stdout, "copy=126\n", "a copy of ls on an overlay was taken for ls: %s", r.stderr)
	assert.Contains(t, r.stderr, mnt+"/ls -d / (rule: default deny", r.stderr)
}

// TestAdvLoaderProgramCopy: the dynamic loader maps the program it is asked
// to run itself, after the exec, and nothing refuses writers to that file
// while it runs (the kernel does so for the image it maps only): a red
// team rewrote a copy of ls run as "ld.so COPY" from a second sandbox
// while it ran, and its own code ran under an allowlist of ls. A copy run
// through the loader is not the program it copies for an allow; ls itself
// through the loader, and the copy run directly, are.
func TestAdvLoaderProgramCopy(t *testing.T) {
	loader, dir := loaderTest(t, "cordon-loader-")
	ls, err := filepath.EvalSymlinks("/bin/ls")
	require.NoError(t, err)
	b, err := os.ReadFile(ls)
	require.NoError(t, err)
	cp := filepath.Join(dir, "lscopy")
	require.NoError(t, os.WriteFile(cp, b, 0o755))

	r := runCordon(t, runOpts{dir: t.TempDir()}, "--default", "deny", "--allow", "sh", "--allow", "ls", "--", "sh", "-c",
		loader+" "+ls+" -d /; echo ls=$?; "+cp+" -d /; echo direct=$?; "+loader+" "+cp+" -d /; echo loaded=$?")
	assert.Contains(t, r.stdout, "direct=0\n", "the copy run directly (the kernel's image): %s", r.stderr)
	assert.Contains(t, r.stdout, "loaded=126\n", "a copy of ls run by the loader was taken for ls: %s", r.stderr)
	if os.Getenv(tierEnv) == "landlock" {
		// The host's mounts are writable there: no loader's program is
		// on read-only mounts, and none is run (fail closed).
		assert.Contains(t, r.stderr, `rule: deny "ld.so PROGRAM"`, r.stderr)
		return
	}
	assert.Contains(t, r.stdout, "ls=0\n", "ls through the loader: %s", r.stderr)
	assert.Contains(t, r.stderr, "lscopy -d / (rule: default deny", r.stderr)
}

// TestAdvLoaderProgramSwapped: the dynamic loader opens its program after
// the exec event, so a program decided as harmless can be swapped for a
// denied one in between by anyone outside the sandbox who can write its
// directory (here the test, exchanging a copy of true and a copy of rm in a
// directory read-only in the sandbox; a red team did it from a second
// sandbox and ran rm under --deny rm, 26 to 100 times in 300). cordon
// follows the loader until it has opened the program decided and kills it
// if the descriptor is another file.
func TestAdvLoaderProgramSwapped(t *testing.T) {
	loader, dir := loaderTest(t, "cordon-swap-")
	for name, from := range map[string]string{"prog": "/bin/true", "alt": "/bin/rm"} {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o755))
	}
	d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(d)
	stop := make(chan struct{})
	swapped := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				swapped <- n
				return
			default:
			}
			if unix.Renameat2(d, "prog", d, "alt", unix.RENAME_EXCHANGE) == nil {
				n++
			}
			if n%64 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	work := t.TempDir()
	script := `i=0; while [ $i -lt 300 ]; do i=$((i+1)); touch v$i; ` + loader + ` ` + dir + `/prog -f v$i 2>/dev/null; done
ls v* | wc -l`
	r := runCordon(t, runOpts{dir: work, timeout: 3 * time.Minute}, "--deny", "rm", "--", "sh", "-c", script)
	close(stop)
	t.Logf("%d exchanges", <-swapped)
	assert.Equal(t, "300", strings.TrimSpace(r.stdout), "rm ran through the loader: %s", lastLines(r.stderr, 5))
	if os.Getenv(tierEnv) == "landlock" {
		return // no loader's program is on a read-only mount there: all refused
	}
	kills := strings.Count(r.stderr, "the dynamic loader opened another file than the program decided")
	t.Logf("%d kills at the loader's open, %d refusals in all", kills, strings.Count(r.stderr, "cordon: denied:"))
	assert.Positive(t, kills, "no swap landed between the event and the loader's open: the test proves nothing")
}

// TestLoaderProgramNeedsTheTracer: with no exec event to follow the loader
// to its program (strict mode), an exec of the loader as a program is
// refused, naming the loader's rule; a program run directly is not.
func TestLoaderProgramNeedsTheTracer(t *testing.T) {
	requireSeccompNotify(t)
	const loader = "/lib64/ld-linux-x86-64.so.2"
	if _, err := os.Stat(loader); err != nil {
		testcap.SkipOrFail(t, "no %s: %v", loader, err)
	}
	r := runCordon(t, runOpts{dir: t.TempDir()}, "--verify", "strict", "--", "/bin/true")
	assert.Equal(t, 0, r.code, r.stderr)
	r = runCordon(t, runOpts{dir: t.TempDir()}, "--verify", "strict", "--", loader, "/bin/true")
	assert.Equal(t, 126, r.code, r.stderr)
	assert.Contains(t, r.stderr, `rule: deny "ld.so PROGRAM"`, r.stderr)
	assert.Contains(t, r.stderr, "strict mode: a dynamic loader opens its program after the exec", r.stderr)
}

// TestLoaderProgramOneNameAndItsOpen: the loader maps its program without
// the write protection the kernel gives an exec'd image, so a program with
// a second name (which a red team had made in the sandbox's working
// directory, to rewrite it after it was decided) is refused; and the
// loader's open of a file to write (LD_DEBUG_OUTPUT, which the red team
// pointed at such a second name so that the watch took it for the
// program's open) neither counts for the program nor kills it.
func TestLoaderProgramOneNameAndItsOpen(t *testing.T) {
	loader, dir := loaderTest(t, "cordon-names-")
	b, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	prog := filepath.Join(dir, "prog")
	require.NoError(t, os.WriteFile(prog, b, 0o755))
	single := filepath.Join(dir, "single")
	require.NoError(t, os.WriteFile(single, b, 0o755))
	require.NoError(t, os.Link(prog, filepath.Join(dir, "second")))
	work := t.TempDir()

	r := runCordon(t, runOpts{dir: work}, "--", "sh", "-c",
		loader+" "+prog+"; echo linked=$?; LD_DEBUG=statistics LD_DEBUG_OUTPUT="+work+"/dbg "+loader+" "+single+"; echo decoy=$?")
	assert.Contains(t, r.stdout, "linked=126\n", "a program with two names was run by the loader: %s", r.stderr)
	assert.Contains(t, r.stderr, prog+" (rule: deny \"ld.so PROGRAM\"", r.stderr)
	if os.Getenv(tierEnv) == "landlock" {
		return // no loader's program is on a read-only mount there
	}
	assert.Contains(t, r.stdout, "decoy=0\n", "the loader's debug output file was taken for its program: %s", r.stderr)
	matches, _ := filepath.Glob(filepath.Join(work, "dbg.*"))
	assert.NotEmpty(t, matches, "the loader wrote no debug output: the open to write was not exercised")
}

// TestAdvLoaderProgramAudited: the audit line of an exec of a loader names
// the program it was decided to run ("loaded"), and when the exec event,
// deciding again, finds another program there and allows it, a second line
// names the one that ran (a red team changed the working directory of a
// relative program path from a second thread: 11 runs in 100 ran another
// program than their only line named). Here the test flips a symlink on the
// program's path between two directories, read-only in the sandbox, holding
// a copy of true and a copy of echo: every run that ran must have, as its
// last line, one whose "loaded" names what ran.
func TestAdvLoaderProgramAudited(t *testing.T) {
	loader, dir := loaderTest(t, "cordon-audit-")
	if os.Getenv(tierEnv) == "landlock" {
		// No loader's program is on a read-only mount there: none runs.
		r := runCordon(t, runOpts{dir: t.TempDir()}, "--", loader, "/bin/true")
		assert.Equal(t, 126, r.code, r.stderr)
		assert.Contains(t, r.stderr, `rule: deny "ld.so PROGRAM"`, r.stderr)
		return
	}
	for sub, from := range map[string]string{"a": "/bin/true", "b": "/bin/echo"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, sub), 0o755))
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, sub, "file"), b, 0o755))
	}
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("a", link))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := link + ".new"
			_ = os.Remove(tmp)
			_ = os.Symlink([]string{"a", "b"}[n%2], tmp)
			_ = os.Rename(tmp, link)
			time.Sleep(time.Duration(100+n%7*50) * time.Microsecond) // as long on a as on b
		}
	}()
	work := t.TempDir()
	audit := filepath.Join(work, "audit.jsonl")
	script := `i=0; while [ $i -lt 500 ]; do i=$((i+1)); out=$(` + loader + ` ` + link + `/file hello 2>/dev/null); echo "rc=$? out=$out"; done`
	r := runCordon(t, runOpts{dir: work, timeout: 3 * time.Minute}, "--audit", audit, "--", "sh", "-c", script)
	close(stop)
	<-done
	require.Equal(t, 0, r.code, r.stderr)

	// The loader's lines, one run each: the check's, then perhaps the
	// event's (a kill, or what ran).
	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	type line struct {
		Argv   []string `json:"argv"`
		Loaded []string `json:"loaded"`
		Reason string   `json:"reason"`
	}
	var runs [][]line
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec line
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		if len(rec.Argv) == 0 || rec.Argv[0] != loader {
			continue
		}
		if rec.Reason == "" {
			runs = append(runs, []line{rec})
		} else if len(runs) > 0 {
			runs[len(runs)-1] = append(runs[len(runs)-1], rec)
		}
	}
	outs := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, runs, len(outs), "one check line per run")
	var echoed, redecided int
	for i, out := range outs {
		if !strings.HasPrefix(out, "rc=0 ") {
			continue // killed at the loader's open
		}
		want := filepath.Join(dir, "a", "file")
		if out == "rc=0 out=hello" {
			want, echoed = filepath.Join(dir, "b", "file"), echoed+1
		}
		if len(runs[i]) > 1 {
			redecided++
		}
		last := runs[i][len(runs[i])-1]
		assert.Equal(t, []string{want}, last.Loaded, "run %d printed %q; its lines: %+v", i, out, runs[i])
	}
	t.Logf("%d runs, %d ran echo, %d with a second line", len(outs), echoed, redecided)
	assert.Positive(t, echoed, "the flip never landed: the test proves nothing")
}

// loaderTest returns the x86-64 dynamic loader, and a fresh directory under
// /var/tmp: a bwrap sandbox working elsewhere sees it read-only (its /tmp is
// its own).
func loaderTest(t *testing.T, prefix string) (loader, dir string) {
	t.Helper()
	requireSeccompNotify(t)
	loader = "/lib64/ld-linux-x86-64.so.2"
	if _, err := os.Stat(loader); err != nil {
		testcap.SkipOrFail(t, "no %s: %v", loader, err)
	}
	dir, err := os.MkdirTemp("/var/tmp", prefix)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return loader, dir
}

// TestAdvErofsDataElsewhere: an erofs file's data can lie on an extra device
// (mkfs.erofs --blobdev, mounted with device=) while its mount names another
// (here a fresh zram device): a red team kept a copy of ls's data in a loop
// device's backing file the sandbox could write, rewrote a page of it after
// the exec event, and its code ran under an allowlist of ls. cordon compares
// no content on erofs: the copy is not ls there.
func TestAdvErofsDataElsewhere(t *testing.T) {
	requireSeccompNotify(t)
	if os.Geteuid() != 0 {
		testcap.SkipOrFail(t, "setting up zram and loop devices needs root")
	}
	t.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin:/sbin")
	mkfs, losetup := requireTool(t, "mkfs.erofs"), requireTool(t, "losetup")
	hotAdd, err := os.ReadFile("/sys/class/zram-control/hot_add") // reading it adds a device
	if err != nil {
		testcap.SkipOrFail(t, "no zram: %v", err)
	}
	zram := "zram" + strings.TrimSpace(string(hotAdd))
	t.Cleanup(func() {
		_ = os.WriteFile("/sys/block/"+zram+"/reset", []byte("1"), 0)
		_ = os.WriteFile("/sys/class/zram-control/hot_remove", []byte(strings.TrimPrefix(zram, "zram")), 0)
	})
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	b, err := os.ReadFile("/bin/ls")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(src, "ls"), b, 0o755))
	meta, blob := filepath.Join(dir, "meta.img"), filepath.Join(dir, "blob.img")
	out, err := exec.Command(mkfs, "--quiet", "--blobdev="+blob, "--chunksize=4096", meta, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile("/sys/block/"+zram+"/disksize", []byte("16M"), 0))
	img, err := os.ReadFile(meta)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile("/dev/"+zram, img, 0))
	out, err = exec.Command(losetup, "-f", "--show", blob).Output()
	require.NoError(t, err)
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command(losetup, "-d", loop).Run() })
	mnt, err := os.MkdirTemp("/var/tmp", "cordon-erofs-") // the sandbox's /tmp is its own
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(mnt) })
	if err := unix.Mount("/dev/"+zram, mnt, "erofs", unix.MS_RDONLY, "device="+loop); err != nil {
		testcap.SkipOrFail(t, "mounting erofs with an extra device: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	got, err := os.ReadFile(filepath.Join(mnt, "ls"))
	require.NoError(t, err)
	require.Equal(t, b, got, "the erofs copy of ls reads otherwise")

	r := runCordon(t, runOpts{dir: t.TempDir()}, "--default", "deny", "--allow", "sh", "--allow", "ls", "--", "sh", "-c",
		"/bin/ls -d /; echo ls=$?; "+mnt+"/ls -d /; echo copy=$?")
	assert.Contains(t, r.stdout, "ls=0\n", "the real ls is allowed: %s", r.stderr)
	assert.Contains(t, r.stdout, "copy=126\n", "a copy of ls on erofs with its data on a loop device was taken for ls: %s", r.stderr)
	assert.Contains(t, r.stderr, mnt+"/ls -d / (rule: default deny", r.stderr)
}
