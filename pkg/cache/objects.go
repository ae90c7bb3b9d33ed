package cache

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// object is one interned (URI, Version, Size). Pages are indexed by the
// object's small id and the page number, so a page costs a few bytes of
// index however long its URI is.
type object struct {
	Object
	id        uint32
	hash      uint64 // of URI, Version and Size: the history's page fingerprints
	uriHash   uint64 // of URI alone: the invalidation fingerprints
	npages    int64
	cacheable bool         // false: key too long for a page header, or too many pages
	writing   atomic.Int32 // storePage writes of o's pages in progress (see dropObject)
	// replaced is set when the URI had another version when this one was
	// interned, one that had a page cached: its cold misses are
	// classified as invalidated.
	replaced bool
	// stored is set once a page of the object is cached (stored, or
	// re-indexed): only such a version, replaced, makes the next one's
	// misses invalidated ones.
	stored atomic.Bool

	// pages counts resident pages (and pages being written). An object
	// whose count is 0 may be collected; see objectTable.sweep.
	pages atomic.Int64
	// dead is set when the object left the table (another version was
	// confirmed, the origin refused this one, Invalidate, collection). A
	// page of a dead object is never inserted.
	dead atomic.Bool
	// swept is set with dead when collection (sweep) took the object
	// out of the table for want of pages, not because its bytes went
	// stale: a page of it fetched since was seen and not kept (a
	// capacity miss next time), and a read using it looks it up again.
	swept atomic.Bool
}

// maxVersions bounds the unconfirmed versions kept per URI.
const maxVersions = 4

// objectTable interns objects.
//
// Which version of a URI is current is decided by the origin, not by the
// order callers ask: a reader with a stale Stat must not evict the new
// version's pages. So a URI may hold several versions at once. When the
// origin serves a version (confirm), every other version of the URI is
// stale and leaves; when the origin refuses one with ErrVersionChanged
// (refuse), that one leaves.
//
// Ids are never reused before 2^32 objects have been interned; readers
// nevertheless check that the slot or the flight they found belongs to
// their *object, so even a reused id cannot serve wrong bytes.
type objectTable struct {
	pageSize int
	maxKey   int // longest URI+version a page header holds (disk tier only)

	// read mirrors byURI for lookups without a shared lock (a sync.Map
	// Load writes no shared memory). Its slices are never modified once
	// stored.
	read sync.Map // string -> []*object

	mu    sync.Mutex           // guards the fields below; writers update read too
	byURI map[string][]*object // the live versions of each URI
	count int                  // objects in byURI
	next  uint32               // last id handed out
	gcAt  int                  // sweep when count reaches this
}

// set makes l the versions of uri. Caller holds t.mu.
func (t *objectTable) set(uri string, l []*object) {
	if len(l) == 0 {
		delete(t.byURI, uri)
		t.read.Delete(uri)
		return
	}
	l = slices.Clip(l)
	t.byURI[uri] = l
	t.read.Store(uri, l)
}

const minSweep = 4096

func newObjectTable(pageSize, maxKey int) *objectTable {
	return &objectTable{pageSize: pageSize, maxKey: maxKey, byURI: make(map[string][]*object), gcAt: minSweep}
}

func objectHash(obj Object) uint64 {
	var d xxhash.Digest
	d.Reset()
	// The URI's length first: ("a\x00b", "") and ("a", "b\x00") differ.
	d.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(obj.URI))))
	d.WriteString(obj.URI)
	d.WriteString(obj.Version)
	d.Write(binary.LittleEndian.AppendUint64(nil, uint64(obj.Size)))
	return d.Sum64()
}

func find(l []*object, obj Object) *object {
	for _, o := range l {
		if o.Version == obj.Version && o.Size == obj.Size {
			return o
		}
	}
	return nil
}

// lookup returns the interned object for obj, interning it if new. When a
// URI already holds maxVersions versions, one leaves (one without pages if
// any, else the oldest) and is returned as stale: the caller drops its
// pages.
func (t *objectTable) lookup(obj Object) (o, stale *object) {
	if l, ok := t.read.Load(obj.URI); ok {
		if o = find(l.([]*object), obj); o != nil {
			return o, nil
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.byURI[obj.URI]
	if o = find(l, obj); o != nil {
		return o, nil
	}
	if t.count >= t.gcAt {
		t.sweep()
		l = t.byURI[obj.URI]
	}
	if len(l) >= maxVersions {
		// Drop a version with no pages if there is one, else the oldest.
		i := slices.IndexFunc(l, func(o *object) bool { return o.pages.Load() == 0 })
		i = max(i, 0)
		stale = l[i]
		stale.dead.Store(true)
		l = slices.Delete(slices.Clone(l), i, i+1)
		t.count--
	}
	o = t.newObject(obj)
	o.replaced = (stale != nil && stale.stored.Load()) ||
		slices.ContainsFunc(l, func(v *object) bool { return v.stored.Load() })
	t.set(obj.URI, append(slices.Clip(l), o))
	t.count++
	return o, stale
}

// intern adds obj, known to be new, without sweeping (re-indexing).
func (t *objectTable) intern(obj Object) *object {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.newObject(obj)
	t.set(obj.URI, append(slices.Clip(t.byURI[obj.URI]), o))
	t.count++
	return o
}

func (t *objectTable) newObject(obj Object) *object {
	t.next++
	if t.next == 0 {
		t.next = 1
	}
	o := &object{
		Object:  obj,
		id:      t.next,
		hash:    objectHash(obj),
		uriHash: xxhash.Sum64String(obj.URI),
		npages:  numPages(obj.Size, t.pageSize),
	}
	o.cacheable = len(obj.URI)+len(obj.Version) <= t.maxKey && o.npages <= maxObjectPages
	return o
}

// confirm records that the origin served o: every other version of its URI
// leaves and is returned for the caller to drop.
func (t *objectTable) confirm(o *object) []*object {
	if l, ok := t.read.Load(o.URI); ok && len(l.([]*object)) <= 1 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.byURI[o.URI]
	if !slices.Contains(l, o) {
		return nil
	}
	var stale []*object
	for _, s := range l {
		if s != o {
			s.dead.Store(true)
			stale = append(stale, s)
		}
	}
	t.set(o.URI, []*object{o})
	t.count -= len(stale)
	return stale
}

// refuse records that the origin refused o's version: o leaves. It
// reports whether o was in the table.
func (t *objectTable) refuse(o *object) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.byURI[o.URI]
	i := slices.Index(l, o)
	if i < 0 {
		return false
	}
	o.dead.Store(true)
	t.set(o.URI, slices.Delete(slices.Clone(l), i, i+1))
	t.count--
	return true
}

// remove takes every version of uri out of the table and returns them.
func (t *objectTable) remove(uri string) []*object {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.byURI[uri]
	for _, o := range l {
		o.dead.Store(true)
	}
	t.set(uri, nil)
	t.count -= len(l)
	return l
}

// sweep drops objects with no resident pages. Caller holds t.mu. The dead
// flag and the page count form a Dekker pair with storePage: either the
// writer sees dead and gives up, or sweep sees its page and keeps the
// object.
func (t *objectTable) sweep() {
	for uri, l := range t.byURI {
		keep := l[:0:0]
		for _, o := range l {
			if o.pages.Load() == 0 {
				o.swept.Store(true)
				o.dead.Store(true)
				if o.pages.Load() == 0 {
					continue
				}
				o.dead.Store(false)
				o.swept.Store(false)
			}
			keep = append(keep, o)
		}
		if len(keep) != len(l) {
			t.count -= len(l) - len(keep)
			t.set(uri, keep)
		}
	}
	t.gcAt = max(2*t.count, minSweep)
}

func (t *objectTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}
