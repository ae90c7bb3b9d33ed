package ring

import (
	"fmt"
	"math"
)

// OwnerBounded returns the owner of key under bounded loads (Mirrokni,
// Thorup and Zadimoghaddam, "Consistent Hashing with Bounded Loads", 2018):
// the first node in key's preference list (ring order, as Owners) whose load
// is below its capacity
//
//	capacity(i) = ceil(c * (totalLoad+1) * Weight(i) / sum of weights)
//
// that is, c times the node's fair share of the load once this key's unit is
// added. load(i) is the current load of the node with index i (see Node and
// Index); totalLoad is the sum of all loads. With c = 1.25 no node takes
// more than 25% over its share, and a key moves off its owner only while the
// owner is full, so most keys still land on their owner. c = 1 forces
// perfect balance; large c gives the plain owner.
//
// Errors: ErrBadLoadFactor for c NaN, infinite or < 1; ErrBadLoad for a nil
// load or a negative totalLoad; ErrNoCapacity when every node is at capacity,
// which happens only if load and totalLoad disagree; ErrEmptyRing on the
// zero Ring. It does not allocate while the walk passes at most 16 nodes, and
// it calls load once per node it passes.
func (r *Ring) OwnerBounded(key string, load func(i int) int, totalLoad int, c float64) (Node, error) {
	if r.empty() {
		return Node{}, ErrEmptyRing
	}
	if math.IsNaN(c) || math.IsInf(c, 0) || c < 1 {
		return Node{}, fmt.Errorf("%w: got %v", ErrBadLoadFactor, c)
	}
	if load == nil {
		return Node{}, fmt.Errorf("%w: nil load function", ErrBadLoad)
	}
	if totalLoad < 0 {
		return Node{}, fmt.Errorf("%w: total load %d is negative", ErrBadLoad, totalLoad)
	}
	perWeight := c * (float64(totalLoad) + 1) / r.weightSum
	w := r.walk(key)
	for o := w.next(); o >= 0; o = w.next() {
		if capacity := math.Ceil(perWeight * r.nodes[o].Weight); float64(load(o)) < capacity {
			return r.nodes[o], nil
		}
	}
	return Node{}, fmt.Errorf("%w: total load %d, c %v", ErrNoCapacity, totalLoad, c)
}
