package policy

// Policy decides which keys stay resident in a cache that holds at most Cap()
// equally sized entries (the page cache's pages). Keys are 64-bit hashes of page
// keys; the caller owns the storage and frees it for every victim a Policy
// returns.
//
// A Policy is a pure, deterministic state machine: no goroutines, no clocks, no
// global randomness (a seeded source if it needs one). It is not safe for
// concurrent use; the caller serialises calls (the page cache holds one Policy
// per shard under the shard's lock). Every method is O(1) amortised and does
// not allocate in steady state.
//
// The protocol for one request is:
//
//	if !p.Touch(k) {          // records the access; false: not resident (a miss)
//	    // ... fetch the entry ...
//	    victims, ok = p.Insert(k, victims[:0])
//	    // free the storage of every key in victims; store k only if ok
//	}
type Policy interface {
	// Name is a short lower-case name for reports ("lru", "locus", ...).
	Name() string
	// Touch records one access to key, resident or not (frequency-based
	// policies count misses too). It reports whether key is resident; a true
	// result is a hit and may reorder the policy's queues.
	Touch(key uint64) bool
	// Insert offers a key that Touch just reported missing. It appends to
	// victims the resident keys that must leave to make room and reports
	// whether key was admitted. A rejected key leaves the resident set
	// unchanged (victims may still be appended to when the policy chose to
	// evict before rejecting: the caller frees them all the same). Inserting a
	// resident key is a no-op that returns (victims, true).
	Insert(key uint64, victims []uint64) ([]uint64, bool)
	// Remove drops key if resident (invalidation, a failed checksum). For a
	// key that is not resident it leaves the resident set unchanged, but a
	// policy may forget what it remembered of the key (the default policy
	// drops it from its simulated candidates, which can change its later
	// choices: the key was invalidated).
	Remove(key uint64)
	// Len is the number of resident keys; never more than Cap.
	Len() int
	// Cap is the capacity in entries.
	Cap() int
}
