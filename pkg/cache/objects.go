package cache

import (
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
	cacheable bool // false: key too long for a page header, or too many pages

	// pages counts resident pages (and pages being written). An object
	// whose count is 0 may be collected; see objectTable.sweep.
	pages atomic.Int64
	// dead is set when the object left the table (new version, Invalidate,
	// collection). A page of a dead object is never inserted.
	dead atomic.Bool
}

// objectTable interns objects. Ids are never reused before 2^32 objects
// have been interned; readers nevertheless check that the slot they found
// belongs to their *object, so even a reused id cannot serve wrong bytes.
type objectTable struct {
	pageSize int

	mu    sync.RWMutex       // guards the fields below
	byURI map[string]*object // the current version of each URI
	next  uint32             // last id handed out
	gcAt  int                // sweep when byURI grows to this size
}

const minSweep = 4096

func newObjectTable(pageSize int) *objectTable {
	return &objectTable{pageSize: pageSize, byURI: make(map[string]*object), gcAt: minSweep}
}

func objectHash(obj Object) uint64 {
	var d xxhash.Digest
	d.Reset()
	d.WriteString(obj.URI)
	d.Write([]byte{0})
	d.WriteString(obj.Version)
	var b [8]byte
	for i := range b {
		b[i] = byte(obj.Size >> (8 * i))
	}
	d.Write(b[:])
	return d.Sum64()
}

// lookup returns the interned object for obj. When the table held another
// version (or size) of obj.URI, that object is removed, marked dead and
// returned as stale: the caller drops its pages.
func (t *objectTable) lookup(obj Object) (o, stale *object) {
	t.mu.RLock()
	o = t.byURI[obj.URI]
	t.mu.RUnlock()
	if o != nil && o.Version == obj.Version && o.Size == obj.Size {
		return o, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o = t.byURI[obj.URI]
	if o != nil && o.Version == obj.Version && o.Size == obj.Size {
		return o, nil
	}
	if o != nil {
		stale = o
		o.dead.Store(true)
		delete(t.byURI, obj.URI)
	}
	if len(t.byURI) >= t.gcAt {
		t.sweep()
	}
	o = t.newObject(obj)
	t.byURI[obj.URI] = o
	return o, stale
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
	o.cacheable = len(obj.URI)+len(obj.Version) <= maxKeyBytes && o.npages <= 1<<32
	return o
}

// remove takes uri out of the table and returns its object (nil if none),
// marked dead.
func (t *objectTable) remove(uri string) *object {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.byURI[uri]
	if o != nil {
		o.dead.Store(true)
		delete(t.byURI, uri)
	}
	return o
}

// sweep drops objects with no resident pages. Caller holds t.mu. The dead
// flag and the page count form a Dekker pair with shard.publish: either the
// inserter sees dead and gives up, or sweep sees its page and keeps the
// object.
func (t *objectTable) sweep() {
	for uri, o := range t.byURI {
		if o.pages.Load() != 0 {
			continue
		}
		o.dead.Store(true)
		if o.pages.Load() != 0 {
			o.dead.Store(false)
			continue
		}
		delete(t.byURI, uri)
	}
	t.gcAt = max(2*len(t.byURI), minSweep)
}

func (t *objectTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byURI)
}
