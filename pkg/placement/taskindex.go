package placement

import (
	"hash/maphash"
	"unsafe"
)

// taskIndex maps (job, task id) to the record of every queued or running
// task (and, during PlaceBatch, of the batch's tasks): the placer's only
// index by task id, so each Submit, Complete or Cancel hashes its id once.
//
// It is an open-addressing table with linear probing: a power-of-two array
// of (hash, record) slots, at most 3/4 full. A key lives in the first slot
// at or after its home slot (hash & mask) with no empty slot in between;
// removal shifts the following entries back instead of leaving tombstones,
// so a miss stops at the first empty slot. What keeps it consistent:
//
//   - the hash of a task is computed once, when it is admitted, and kept
//     in task.hash (the job part is the job's number, not its name, so the
//     job record must outlive its tasks: jobs with tasks are never
//     forgotten);
//   - removing a task looks for its record's address from its home slot,
//     so it costs no hashing and no key compare, and entries that move
//     need no update in their records;
//   - insert and remove are the only writers (admit and forget in
//     placer.go call them); Verify checks slot, hash and key of every entry.
//
// The hash seed is random, as Go's maps' are, against ids crafted to
// collide: no decision depends on the table's layout.
type taskIndex struct {
	seed  maphash.Seed
	slots []taskSlot
	n     int // entries
}

type taskSlot struct {
	hash uint64 // 0: empty (hashOf never returns 0)
	t    *task
}

const minIndexSlots = 64

func newTaskIndex() taskIndex {
	return taskIndex{seed: maphash.MakeSeed(), slots: make([]taskSlot, minIndexSlots)}
}

// hashOf hashes a task id within job j.
func (x *taskIndex) hashOf(j *jobState, id string) uint64 {
	h := maphash.String(x.seed, id) ^ (j.num * 0x9e3779b97f4a7c15)
	if h == 0 {
		h = 1
	}
	return h
}

// find returns the task of job j with id, hashed h = hashOf(j, id); nil if
// none.
func (x *taskIndex) find(h uint64, j *jobState, id string) *task {
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.hash == 0 {
			return nil
		}
		if s.hash == h && s.t.job == j && s.t.key.id == id {
			return s.t
		}
	}
}

// insert adds t, whose hash, job and key are set and which is not indexed.
func (x *taskIndex) insert(t *task) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.resize(len(x.slots) * 2)
	}
	x.place(t)
	x.n++
}

func (x *taskIndex) place(t *task) {
	mask := uint64(len(x.slots) - 1)
	i := t.hash & mask
	for x.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = taskSlot{hash: t.hash, t: t}
}

// remove takes t out of the index (backward-shift deletion).
func (x *taskIndex) remove(t *task) {
	mask := len(x.slots) - 1
	hole := int(t.hash) & mask
	for x.slots[hole].t != t {
		hole = (hole + 1) & mask
	}
	for j := (hole + 1) & mask; x.slots[j].hash != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole unless its home slot lies
		// cyclically in (hole, j]: it would then sit before its home.
		home := int(x.slots[j].hash) & mask
		if (j-home)&mask >= (j-hole)&mask {
			x.slots[hole] = x.slots[j]
			hole = j
		}
	}
	x.slots[hole] = taskSlot{}
	x.n--
	if len(x.slots) > minIndexSlots && x.n*16 < len(x.slots) {
		x.resize(len(x.slots) / 4) // after a burst, give the memory back
	}
}

// grow makes room for n more entries without resizing on the way.
func (x *taskIndex) grow(n int) {
	size := max(len(x.slots), minIndexSlots)
	for (x.n+n)*4 > size*3 {
		size *= 2
	}
	if size != len(x.slots) {
		x.resize(size)
	}
}

func (x *taskIndex) resize(size int) {
	old := x.slots
	x.slots = make([]taskSlot, max(size, minIndexSlots))
	for _, s := range old {
		if s.hash != 0 {
			x.place(s.t)
		}
	}
}

// nodeCache is a direct-mapped cache in front of Placer.nodes, indexed by
// the address of the id string's bytes. Preference lists are mostly built
// from the same strings (the ring's node ids), so a hit costs an address
// hash and a string compare that stops at equal pointers, instead of a map
// lookup that hashes the id. An entry is only a hint: it hits when its id
// equals the one looked up, whatever its address. It holds the string, so
// the memory cannot be reused for another id while cached; node records are
// never deleted, so an entry never goes stale.
type nodeCache [256]struct {
	id string
	n  *node
}

func (c *nodeCache) slot(id string) int {
	a := uint64(uintptr(unsafe.Pointer(unsafe.StringData(id))))
	return int((a * 0x9e3779b97f4a7c15) >> (64 - 8))
}
