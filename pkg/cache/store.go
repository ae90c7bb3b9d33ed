package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locuscache/locus/internal/units"
)

// store is where slots live: page data in RAM (memStore) or in mmapped
// slab files (diskStore). Slot numbers are dense, 0..nslots-1.
//
// Threading: page may be called concurrently for any slot; write and clear
// are called only by the goroutine that owns the slot at that moment (a
// reserved, unpublished slot, or a pinned one being dropped).
type store interface {
	nslots() int
	// page returns the slot's memory (slotSize bytes). For disk slots it is
	// a read-only mapping: writing to it faults.
	page(slot uint32) []byte
	// write stores data, then its header, in slot. The slot holds no
	// valid header (the caller cleared an older one first): a crash
	// between the two writes leaves no header, so no partial page.
	write(slot uint32, h *pageHeader, data []byte) error
	// clear zeroes the slot's header so a restart does not bring it back.
	clear(slot uint32) error
	// populate maps the slot's pages ahead of a first read (best effort).
	populate(slot uint32)
	// durable reports whether pages survive a restart (headers exist).
	durable() bool
	close() error
}

// memStore keeps slots in RAM, in chunks of at most 64 MiB so that one huge
// allocation is never needed.
type memStore struct {
	slotSize int
	perChunk int
	n        int
	chunks   [][]byte
}

func newMemStore(n, slotSize int) *memStore {
	per := max(1, (64<<20)/slotSize)
	s := &memStore{slotSize: slotSize, perChunk: per, n: n}
	for left := n; left > 0; left -= per {
		s.chunks = append(s.chunks, make([]byte, min(left, per)*slotSize))
	}
	return s
}

func (s *memStore) nslots() int { return s.n }
func (s *memStore) page(slot uint32) []byte {
	c, j := int(slot)/s.perChunk, int(slot)%s.perChunk
	return s.chunks[c][j*s.slotSize : (j+1)*s.slotSize : (j+1)*s.slotSize]
}
func (s *memStore) write(slot uint32, _ *pageHeader, data []byte) error {
	copy(s.page(slot), data)
	return nil
}
func (s *memStore) clear(uint32) error { return nil }
func (s *memStore) populate(uint32)    {}
func (s *memStore) durable() bool      { return false }
func (s *memStore) close() error       { s.chunks = nil; return nil }

// hooks lets tests inject failures and delays into the disk path.
type hooks struct {
	pwrite    func(fd int, p []byte, off int64) (int, error)
	fallocate func(fd int, off, n int64) error
	mmap      func(fd int, off int64, n int, prot, flags int) ([]byte, error)
	// afterData runs between a page's data write and its header write.
	afterData func()
	// clock, if set, replaces time.Now for the pauses after a failed write.
	clock func() time.Time
}

func (h *hooks) now() time.Time {
	if h != nil && h.clock != nil {
		return h.clock()
	}
	return time.Now()
}

func (h *hooks) doPwrite(fd int, p []byte, off int64) (int, error) {
	if h != nil && h.pwrite != nil {
		return h.pwrite(fd, p, off)
	}
	return unix.Pwrite(fd, p, off)
}

func (h *hooks) doFallocate(fd int, off, n int64) error {
	if h != nil && h.fallocate != nil {
		return h.fallocate(fd, off, n)
	}
	return unix.Fallocate(fd, 0, off, n)
}

func (h *hooks) doMmap(fd int, off int64, n int, prot, flags int) ([]byte, error) {
	if h != nil && h.mmap != nil {
		return h.mmap(fd, off, n, prot, flags)
	}
	return unix.Mmap(fd, off, n, prot, flags)
}

// slab is one mapped slab file.
type slab struct {
	path   string
	f      *os.File
	fd     int
	mem    []byte // the whole file, PROT_READ, MAP_SHARED
	geo    slabGeometry
	reused bool // held a valid superblock at open: its headers are re-indexed
}

// diskStore is the SSD tier: slab files, each mapped once.
type diskStore struct {
	dir      string
	lock     *os.File
	slabs    []*slab
	perSlab  int // slots in every slab but possibly the last
	slotSize int
	n        int
	hooks    *hooks
	zeros    [headerSize]byte
}

const lockName = "LOCK"

func slabName(i int) string { return fmt.Sprintf("slab-%06d.lcs", i) }

// openDir checks dir and takes its lock.
func openDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: cannot create %q: %w", ErrBadDir, dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot stat %q: %w", ErrBadDir, dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %q is not a directory", ErrBadDir, dir)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not writable: %w", ErrBadDir, dir, err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %q", ErrDirLocked, dir)
		}
		return nil, fmt.Errorf("%w: cannot lock %q: %w", ErrBadDir, dir, err)
	}
	// Creating the lock file may succeed on a read-only remount of an
	// existing file; prove we can create and remove a file.
	// A full file system (no inode or block left for the probe) is
	// writable: the slab files already there are reused, and new ones
	// find the disk full while preallocating.
	probe := filepath.Join(dir, ".probe")
	pf, err := os.OpenFile(probe, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil && !isNoSpace(err) {
		lock.Close()
		return nil, fmt.Errorf("%w: %q is not writable: %w", ErrBadDir, dir, err)
	}
	if err == nil {
		pf.Close()
		os.Remove(probe)
	}
	return lock, nil
}

// removeSlabsFrom removes dir's slab files numbered from first on.
func removeSlabsFrom(dir string, first int) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		var k int
		if _, err := fmt.Sscanf(e.Name(), "slab-%06d.lcs", &k); err == nil && strings.HasSuffix(e.Name(), ".lcs") && k >= first {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// isNoSpace says whether err is a full disk or quota (of blocks or inodes).
func isNoSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// openDiskStore opens or creates the slab files for capacity bytes. When
// the disk runs out of space while preallocating it keeps the slabs that
// fit and returns a non-empty degraded reason (no slabs at all: the cache
// passes reads through). Other errors are fatal.
func openDiskStore(dir string, capacity, slabSize int64, pageSize int, hk *hooks, log *slog.Logger) (s *diskStore, degraded string, err error) {
	lock, err := openDir(dir)
	if err != nil {
		if !isNoSpace(err) {
			return nil, "", err
		}
		// No room even for the lock file (no inode left, say): pass reads
		// through, and touch nothing in dir, which is not locked.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe
		}
		degraded = fmt.Sprintf("disk full: no space or inode left in %s for the cache's lock file (%v): passing reads through", dir, err)
		log.Warn("cache degraded", "reason", degraded)
		return &diskStore{dir: dir, hooks: hk}, degraded, nil
	}
	full := geometryFor(slabSize, pageSize)
	if full.nslots == 0 {
		lock.Close()
		return nil, "", fmt.Errorf("%w: slab size %d cannot hold one %d-byte page and its header", ErrInvalidConfig, slabSize, pageSize)
	}
	var geos []slabGeometry
	for i := int64(0); i < capacity/slabSize; i++ {
		geos = append(geos, full)
	}
	if rest := geometryFor(capacity%slabSize, pageSize); rest.nslots > 0 {
		geos = append(geos, rest)
	}
	s = &diskStore{dir: dir, lock: lock, perSlab: full.nslots, slotSize: full.slotSize, hooks: hk}
	// On an error the store is closed (its slabs unmapped, its lock
	// released) through its own variable: the error returns set s to nil.
	opened := s
	defer func() {
		if err != nil {
			opened.close()
		}
	}()
	// Slab files past the new count go first: preallocating the new ones
	// beside them would hold more than either capacity on disk for a
	// moment, and slabsThatFit counts their space as free.
	removeSlabsFrom(dir, len(geos))
	if fit, free, reserve, ok := slabsThatFit(dir, geos); ok && fit < len(geos) {
		degraded = fmt.Sprintf("disk full: %s free in %s besides the cache's own slab files (keeping %s free for the rest of the machine): caching on %d of %d slabs",
			units.HumanBytes(free), dir, units.HumanBytes(reserve), fit, len(geos))
		log.Warn("cache degraded", "reason", degraded)
		geos = geos[:fit]
	}
	for i, g := range geos {
		sl, err := s.openSlab(filepath.Join(dir, slabName(i)), g, pageSize, log)
		if err != nil {
			if isNoSpace(err) {
				degraded = fmt.Sprintf("disk full while preallocating slab %d of %d in %s: caching on %d of %d slabs (%v)",
					i+1, len(geos), dir, i, len(geos), err)
				log.Warn("cache degraded", "reason", degraded)
				break
			}
			return nil, "", err
		}
		s.slabs = append(s.slabs, sl)
		s.n += g.nslots
	}
	// Slab files past the ones in use (a smaller capacity, or those that did
	// not fit) are removed so the directory holds at most capacity bytes.
	removeSlabsFrom(dir, len(s.slabs))
	return s, degraded, nil
}

// slabsThatFit says how many of the slabs geos (in order) fit: in the space
// the slab files already there hold (they are reused, so a warm restart on
// a full disk keeps them all) plus the free space of dir's file system
// less a reserve, 5% of the file system and at most 1 GiB, so that a
// cache size larger than the disk degrades the cache instead of filling
// the disk for every other user. It also returns the free space and the
// reserve. ok is false when the file system cannot be asked (then
// preallocation alone finds out).
func slabsThatFit(dir string, geos []slabGeometry) (fit int, free, reserve int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return len(geos), 0, 0, false
	}
	bs := int64(st.Frsize) // statvfs counts blocks in fragment-size units
	if bs == 0 {
		bs = int64(st.Bsize)
	}
	free = int64(st.Bavail) * bs
	reserve = min(int64(st.Blocks)*bs/20, 1<<30)
	var held int64
	for i := range geos {
		var fst unix.Stat_t
		if unix.Stat(filepath.Join(dir, slabName(i)), &fst) == nil {
			// The file's allocated bytes: a sparse slab (a file system
			// without fallocate) needs its holes from the free space, or
			// filling them would eat the reserve.
			held += fst.Blocks * 512
		}
	}
	budget := max(0, free-reserve) + held // the reserve is kept out of new space only
	var need int64
	for fit < len(geos) && need+geos[fit].fileSize <= budget {
		need += geos[fit].fileSize
		fit++
	}
	return fit, free, reserve, true
}

// openSlab opens (creating or re-laying it as needed) and maps the slab
// file path. On an error the file is removed only if openSlab had begun to
// re-lay it: a slab of the right layout that fails to map (ENOMEM, or
// vm.max_map_count reached) keeps its pages for the next start.
func (s *diskStore) openSlab(path string, g slabGeometry, pageSize int, log *slog.Logger) (_ *slab, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot open %q: %w", ErrBadDir, path, err)
	}
	sl := &slab{path: path, f: f, fd: int(f.Fd()), geo: g}
	relaid := false // truncated here: nothing in it is worth keeping
	defer func() {
		if err != nil {
			f.Close()
			if relaid {
				os.Remove(path)
			}
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot stat %q: %w", path, err)
	}
	var sb [superSize]byte
	if fi.Size() == g.fileSize {
		if n, _ := f.ReadAt(sb[:], 0); n == superSize && superMatches(sb[:], g, pageSize) {
			sl.reused = true
		}
	}
	if !sl.reused {
		if fi.Size() != 0 {
			log.Warn("cache: discarding a slab of another layout (page size or slab size changed): its cached pages are lost", "path", path)
		}
		relaid = true
		if err := f.Truncate(0); err != nil {
			return nil, fmt.Errorf("cannot truncate %q: %w", path, err)
		}
		if err := s.hooks.doFallocate(sl.fd, 0, g.fileSize); err != nil {
			if !errors.Is(err, unix.EOPNOTSUPP) {
				return nil, fmt.Errorf("cannot preallocate %q (%d bytes): %w", path, g.fileSize, err)
			}
			// No fallocate (rare filesystems): a sparse file. A later write
			// that finds the disk full fails with ENOSPC and degrades the
			// cache; pwrite never faults the way a store into a mapping
			// would.
			log.Warn("cache: fallocate unsupported, slab is sparse", "path", path)
			if err := f.Truncate(g.fileSize); err != nil {
				return nil, fmt.Errorf("cannot size %q: %w", path, err)
			}
		}
		encodeSuper(sb[:], g, pageSize)
		if _, err := s.hooks.doPwrite(sl.fd, sb[:], 0); err != nil {
			return nil, fmt.Errorf("cannot write superblock of %q: %w", path, err)
		}
	}
	mem, err := s.hooks.doMmap(sl.fd, 0, int(g.fileSize), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("cannot map %q: %w", path, err)
	}
	// Reads are page-sized and random: no readahead past the slot (a first
	// read asks for the whole slot with populate).
	_ = unix.Madvise(mem[g.dataOff:], unix.MADV_RANDOM)
	sl.mem = mem
	return sl, nil
}

func (s *diskStore) nslots() int { return s.n }

func (s *diskStore) locate(slot uint32) (*slab, int) {
	return s.slabs[int(slot)/s.perSlab], int(slot) % s.perSlab
}

func (s *diskStore) page(slot uint32) []byte {
	sl, j := s.locate(slot)
	off := int(sl.geo.dataOff) + j*s.slotSize
	return sl.mem[off : off+s.slotSize : off+s.slotSize]
}

func (s *diskStore) pwriteFull(fd int, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := s.hooks.doPwrite(fd, p, off)
		if err != nil {
			return err
		}
		if n == 0 {
			return unix.EIO
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

func (s *diskStore) write(slot uint32, h *pageHeader, data []byte) error {
	sl, j := s.locate(slot)
	hoff := sl.geo.hdrOff + int64(j)*headerSize
	if err := s.pwriteFull(sl.fd, data, sl.geo.dataOff+int64(j)*int64(s.slotSize)); err != nil {
		return err
	}
	if s.hooks != nil && s.hooks.afterData != nil {
		s.hooks.afterData()
	}
	var b [headerSize]byte
	encodeHeader(b[:], h)
	return s.pwriteFull(sl.fd, b[:], hoff)
}

func (s *diskStore) clear(slot uint32) error {
	sl, j := s.locate(slot)
	return s.pwriteFull(sl.fd, s.zeros[:], sl.geo.hdrOff+int64(j)*headerSize)
}

func (s *diskStore) populate(slot uint32) {
	// MADV_POPULATE_READ (Linux 5.14) maps the slot's pages in one call
	// instead of a fault per 4 KiB; older kernels answer EINVAL.
	_ = unix.Madvise(s.page(slot), unix.MADV_POPULATE_READ)
}

func (s *diskStore) durable() bool { return true }

func (s *diskStore) diskBytes() int64 {
	var n int64
	for _, sl := range s.slabs {
		n += sl.geo.fileSize
	}
	return n
}

func (s *diskStore) close() error {
	var first error
	for _, sl := range s.slabs {
		if sl.mem != nil {
			if err := unix.Munmap(sl.mem); err != nil && first == nil {
				first = err
			}
			sl.mem = nil
		}
		if err := sl.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.slabs = nil
	if s.lock != nil {
		s.lock.Close() // releases the flock
		s.lock = nil
	}
	return first
}
