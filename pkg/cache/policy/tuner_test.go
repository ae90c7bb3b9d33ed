package policy

import (
	"math/rand/v2"
	"testing"
)

// phasedKeys alternates phases that favour opposite windows: loops over
// 1.5 x capacity keys (a small window keeps part of the loop) and a sliding
// recency window with reversals (a large window, LRU, wins).
func phasedKeys(capacity int, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 5))
	var keys []uint64
	base := uint64(0)
	for phase := 0; phase < 8; phase++ {
		if phase%2 == 0 {
			n := uint64(capacity + capacity/2)
			for rep := 0; rep < 12; rep++ {
				for k := uint64(0); k < n; k++ {
					keys = append(keys, base+k)
				}
			}
		} else {
			for i := 0; i < 30*capacity; i++ {
				// Recent keys are hot: distance from the head is geometric.
				d := uint64(rng.ExpFloat64() * float64(capacity) / 3)
				head := base + uint64(i/4)
				if head >= d {
					keys = append(keys, head-d)
				}
			}
		}
		base += 1 << 30
	}
	return keys
}

// TestTunerSwitchesAndKeepsContract drives the default policy through phase
// changes that make the tuner switch windows (adopting a shadow's state when
// it samples every key, setting the window otherwise) and checks the Policy
// contract against a model of the stored keys at every step.
func TestTunerSwitchesAndKeepsContract(t *testing.T) {
	for _, capacity := range []int{3, 40, 300, 3000} {
		pol, err := New(capacity, 7)
		if err != nil {
			t.Fatal(err)
		}
		p := pol.(*tinyLFU)
		model := map[uint64]bool{}
		var victims []uint64
		switches, last := 0, p.tuner.cur
		hits := 0
		keys := phasedKeys(capacity, uint64(capacity))
		for op, k := range keys {
			if op%97 == 0 {
				p.Remove(k)
				delete(model, k)
			}
			hit := p.Touch(k)
			if hit != model[k] {
				t.Fatalf("cap %d op %d: Touch(%d) = %v, model %v", capacity, op, k, hit, model[k])
			}
			if hit {
				hits++
			} else {
				var ok bool
				victims, ok = p.Insert(k, victims[:0])
				for _, v := range victims {
					if !model[v] {
						t.Fatalf("cap %d op %d: victim %d is not stored", capacity, op, v)
					}
					delete(model, v)
				}
				if ok {
					model[k] = true
				}
			}
			if p.Len() != len(model) || p.Len() > p.Cap() || p.size() > p.Cap() {
				t.Fatalf("cap %d op %d: Len %d, model %d, nodes %d, Cap %d", capacity, op, p.Len(), len(model), p.size(), p.Cap())
			}
			if p.tuner.cur != last {
				switches++
				last = p.tuner.cur
			}
		}
		t.Logf("cap %d: %d accesses, hit ratio %.3f, %d window switches, full sample %v", capacity, len(keys), float64(hits)/float64(len(keys)), switches, p.tuner.full)
		if capacity >= 40 && switches == 0 {
			t.Errorf("cap %d: the tuner never switched windows on a phased workload", capacity)
		}
	}
}

// TestAdoptMakesACopy: right after adopting a shadow, the live policy holds
// the shadow's keys (as stored keys or phantoms) and still reports exactly
// the keys the caller stores.
func TestAdoptMakesACopy(t *testing.T) {
	const capacity = 50
	live := newTinyLFU(capacity, 1, 0.01)
	shadow := newTinyLFU(capacity, 2, 0.99)
	var v []uint64
	stored := map[uint64]bool{}
	for k := uint64(0); k < 200; k++ {
		if !live.Touch(k % 70) {
			v, _ = live.Insert(k%70, v[:0])
			for _, x := range v {
				delete(stored, x)
			}
			stored[k%70] = true
		}
		if !shadow.Touch(k % 90) {
			shadow.Insert(k%90, nil)
		}
	}
	// Invalidate some stored keys, so the shadow holds more keys than the
	// caller stores and phantoms remain after the doomed keys took places.
	removed := 0
	for k := range stored {
		if removed == 10 {
			break
		}
		live.Remove(k)
		delete(stored, k)
		removed++
	}
	if !live.adopt(shadow, make([]uint64, 0, capacity+1)) {
		t.Fatal("adopt refused equal capacities")
	}
	if live.Len() != len(stored) || live.size() > capacity {
		t.Fatalf("after adopt: Len %d, stored %d, nodes %d", live.Len(), len(stored), live.size())
	}
	for k := range stored {
		if !live.Touch(k) {
			t.Fatalf("stored key %d lost by adopt", k)
		}
	}
	// Every node is a stored key or a phantom of a key the caller does not
	// store; phantoms hold the shadow's keys.
	shadowKeys := map[uint64]bool{}
	for _, l := range []*list{&shadow.window, &shadow.prob, &shadow.prot} {
		for i := l.head; i != nilIdx; i = shadow.nodes[i].next {
			shadowKeys[shadow.nodes[i].key] = true
		}
	}
	phantoms := 0
	for _, l := range []*list{&live.window, &live.prob, &live.prot} {
		for i := l.head; i != nilIdx; i = live.nodes[i].next {
			n := live.nodes[i]
			if n.phantom {
				phantoms++
				if stored[n.key] || !shadowKeys[n.key] {
					t.Fatalf("phantom %d: stored %v, in shadow %v", n.key, stored[n.key], shadowKeys[n.key])
				}
			} else if !stored[n.key] {
				t.Fatalf("node %d is neither stored nor a phantom", n.key)
			}
		}
	}
	if phantoms != live.phantoms || phantoms == 0 {
		t.Fatalf("%d phantoms counted, policy says %d (want > 0 for this setup)", phantoms, live.phantoms)
	}
	if live.windowMax != shadow.windowMax {
		t.Errorf("window %d, want the shadow's %d", live.windowMax, shadow.windowMax)
	}
	other := newTinyLFU(capacity+1, 2, 0.5)
	if live.adopt(other, nil) {
		t.Error("adopt accepted a shadow of another capacity")
	}
}
