package runner

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
)

// prefetchWorkers is how many goroutines read directories ahead of the
// files walk. Reading a directory is mostly kernel time (getdents of an
// ext4 htree, ~20 µs each), and the host's second CPU is otherwise idle
// before bubblewrap starts; more readers than CPUs would only queue.
const prefetchWorkers = 2

// walkDir is filepath.WalkDir with the directories' listings read ahead on
// other goroutines. Everything that decides anything stays sequential and
// in the same order: fn is called for the same paths, in the same lexical
// order, with the same entries and the same errors as filepath.WalkDir
// gives (a listing read ahead is the os.ReadDir the walk would have made,
// made a little earlier). Only the reading moves. want says which
// subdirectories are worth reading ahead (a hint: a directory it refuses is
// read by the walk itself when the walk enters it, so a wrong hint costs
// time, never a path); fn's SkipDir decides what is entered, as before.
type walker struct {
	want func(path, name string) bool
	// stopped: the walk is over; queued reads are dropped.
	stopped atomic.Bool
	mu      sync.Mutex
	ahead   map[string]*listing
	queue   chan *listing
	wg      sync.WaitGroup
}

// listing is one directory's os.ReadDir, read once, by whoever takes it
// first: a prefetcher or the walk.
type listing struct {
	path  string
	taken atomic.Bool
	done  chan struct{}
	ents  []fs.DirEntry
	err   error
}

func (l *listing) read() {
	l.ents, l.err = os.ReadDir(l.path)
	close(l.done)
}

// walkDir walks root as filepath.WalkDir does. invalidate, passed to fn's
// closure through w.forget, drops a listing read ahead of a change the
// walk itself made (a .git/hooks it created), so the walk reads it again
// after the change, as the sequential walk would.
func (w *walker) walkDir(root string, fn fs.WalkDirFunc) error {
	if runtime.GOMAXPROCS(0) > 1 {
		w.ahead = map[string]*listing{}
		defer func() {
			if w.queue == nil {
				return
			}
			w.stopped.Store(true)
			close(w.queue)
			// Wait for the reads in flight: no goroutine of the walk
			// outlives it.
			w.wg.Wait()
		}()
	}
	info, err := os.Lstat(root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		err = w.walk(root, fs.FileInfoToDirEntry(info), fn)
	}
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

func (w *walker) prefetch() {
	defer w.wg.Done()
	for l := range w.queue {
		if w.stopped.Load() || !l.taken.CompareAndSwap(false, true) {
			continue
		}
		l.read()
	}
}

// readDir is os.ReadDir(path), from the read made ahead when there is one.
func (w *walker) readDir(path string) ([]fs.DirEntry, error) {
	if w.ahead == nil {
		return os.ReadDir(path)
	}
	w.mu.Lock()
	l := w.ahead[path]
	delete(w.ahead, path)
	w.mu.Unlock()
	if l == nil {
		return os.ReadDir(path)
	}
	if l.taken.CompareAndSwap(false, true) {
		l.read()
	} else {
		<-l.done
	}
	return l.ents, l.err
}

// forget drops what was read ahead for dir: the walk changed it.
func (w *walker) forget(dir string) {
	if w.ahead == nil {
		return
	}
	w.mu.Lock()
	delete(w.ahead, dir)
	w.mu.Unlock()
}

// schedule queues the subdirectories of path that want accepts.
func (w *walker) schedule(path string, ents []fs.DirEntry) {
	if w.ahead == nil {
		return
	}
	for _, d := range ents {
		if !d.IsDir() {
			continue
		}
		p := filepath.Join(path, d.Name())
		if w.want != nil && !w.want(p, d.Name()) {
			continue
		}
		if w.queue == nil {
			// Started at the first subdirectory: a base without
			// any (most of the home directory's) costs nothing.
			w.queue = make(chan *listing, 256)
			for range prefetchWorkers {
				w.wg.Add(1)
				go w.prefetch()
			}
		}
		l := &listing{path: p, done: make(chan struct{})}
		select {
		case w.queue <- l:
			w.mu.Lock()
			w.ahead[p] = l
			w.mu.Unlock()
		default:
			return
		}
	}
}

// walk is filepath's walkDir, reading through readDir.
func (w *walker) walk(path string, d fs.DirEntry, fn fs.WalkDirFunc) error {
	if err := fn(path, d, nil); err != nil || !d.IsDir() {
		if err == filepath.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	dirs, err := w.readDir(path)
	if err != nil {
		err = fn(path, d, err)
		if err != nil {
			if err == filepath.SkipDir && d.IsDir() {
				err = nil
			}
			return err
		}
	}
	w.schedule(path, dirs)
	for _, d1 := range dirs {
		path1 := filepath.Join(path, d1.Name())
		if err := w.walk(path1, d1, fn); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
