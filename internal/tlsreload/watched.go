package tlsreload

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// watched is a value loaded from files and loaded again when they change:
// at most once per interval, a get first stats the files and, if any of
// them changed, loads them again. A change that does not load is tried
// once (the next change is tried again) and the old value kept. Pair and
// CA are watched values; get is safe for concurrent use.
type watched[T any] struct {
	files []watchedFile
	settings
	load   func() (*T, error)
	loaded func(v *T)               // a new value was loaded (called under mu)
	failed func(err error, st bool) // a change did not load, or (st) a file could not be stat'ed

	cur     atomic.Pointer[T]
	checked atomic.Int64 // unix nanoseconds of the last check of the files

	mu     sync.Mutex  // serialises checks; guards stamps
	stamps []fileStamp // of the files when last loaded (or tried)
}

// watchedFile is a file of a watched value, and what it is (for errors).
type watchedFile struct{ path, what string }

// fileStamp identifies a file's contents without reading it.
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64 // a file replaced by rename (Kubernetes' swap) is a new inode
	// ctime (status change, Linux) changes with the mode or owner too: a
	// file that could not be read is tried again once chmod or chown fixed it.
	ctime int64
}

// start loads the value the first time; an error names the file.
func (w *watched[T]) start() error {
	st, err := w.stat()
	if err != nil {
		return err
	}
	v, err := w.load()
	if err != nil {
		return err
	}
	w.stamps = st
	w.cur.Store(v)
	w.checked.Store(w.now().UnixNano())
	return nil
}

func (w *watched[T]) stat() ([]fileStamp, error) {
	st := make([]fileStamp, len(w.files))
	for i, f := range w.files {
		fi, err := os.Stat(f.path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", f.what, f.path, err)
		}
		st[i] = fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi), ctime: changeTime(fi)}
	}
	return st, nil
}

// inode is fi's inode number, 0 where the platform does not say.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// get returns the current value, first loading the files again if the
// check interval has passed and they changed.
func (w *watched[T]) get() *T {
	now := w.now()
	if now.UnixNano()-w.checked.Load() < int64(w.interval) {
		return w.cur.Load()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.UnixNano()-w.checked.Load() < int64(w.interval) {
		return w.cur.Load() // another caller just checked
	}
	w.checked.Store(now.UnixNano())
	st, err := w.stat()
	if err != nil {
		w.failed(err, true)
		return w.cur.Load()
	}
	if slices.Equal(st, w.stamps) {
		return w.cur.Load()
	}
	w.stamps = st // tried once per change: files that fail wait for the next one
	v, err := w.load()
	if err != nil {
		w.failed(err, false)
		return w.cur.Load()
	}
	w.cur.Store(v)
	w.loaded(v)
	return v
}
