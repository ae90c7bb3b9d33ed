package placement

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// checkTaskIndex checks the linear-probing invariant: every entry sits at
// or after its home slot with no empty slot in between, and n counts them.
func checkTaskIndex(t *testing.T, x *taskIndex) {
	t.Helper()
	mask := len(x.slots) - 1
	n := 0
	for i, s := range x.slots {
		if s.hash == 0 {
			continue
		}
		n++
		if s.t == nil || s.t.hash != s.hash {
			t.Fatalf("slot %d: hash %#x, task %v", i, s.hash, s.t)
		}
		for j := int(s.hash) & mask; j != i; j = (j + 1) & mask {
			if x.slots[j].hash == 0 {
				t.Fatalf("slot %d (%v): empty slot %d between it and its home %d", i, s.t.key, j, int(s.hash)&mask)
			}
		}
	}
	if n != x.n {
		t.Fatalf("%d entries, n = %d", n, x.n)
	}
	if n*4 > len(x.slots)*3 {
		t.Fatalf("%d entries in %d slots: over 3/4 full", n, len(x.slots))
	}
}

// TestTaskIndexAgainstMap runs random inserts, finds and removes against a
// map, across growth and shrinking.
func TestTaskIndexAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newTaskIndex()
	jobs := []*jobState{{name: "a", num: 1}, {name: "b", num: 2}, {name: "c", num: 3}}
	ref := map[taskKey]*task{}
	var keys []taskKey
	find := func(k taskKey, j *jobState) *task { return x.find(x.hashOf(j, k.id), j, k.id) }
	jobOf := func(name string) *jobState { return jobs[name[0]-'a'] }
	// Grow to about 3000 entries, shrink to about 10, grow again.
	for phase, target := range []int{3000, 10, 2000} {
		for step := 0; step < 20000; step++ {
			grow := len(ref) < target
			switch r := rng.IntN(10); {
			case r < 5 && grow || r < 2:
				j := jobs[rng.IntN(len(jobs))]
				k := taskKey{j.name, "t" + strconv.Itoa(rng.IntN(5000))}
				if ref[k] != nil {
					continue
				}
				tk := &task{key: k, job: j, hash: x.hashOf(j, k.id)}
				x.insert(tk)
				ref[k] = tk
				keys = append(keys, k)
			case r < 8 && len(keys) > 0:
				i := rng.IntN(len(keys))
				k := keys[i]
				keys[i] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
				x.remove(ref[k])
				delete(ref, k)
			default:
				j := jobs[rng.IntN(len(jobs))]
				k := taskKey{j.name, "t" + strconv.Itoa(rng.IntN(5000))}
				if got, want := find(k, j), ref[k]; got != want {
					t.Fatalf("phase %d step %d: find %v = %p, want %p", phase, step, k, got, want)
				}
			}
			if step%997 == 0 {
				checkTaskIndex(t, &x)
			}
		}
		checkTaskIndex(t, &x)
		for k, tk := range ref {
			if got := find(k, jobOf(k.job)); got != tk {
				t.Fatalf("phase %d: find %v = %p, want %p", phase, k, got, tk)
			}
		}
		t.Logf("phase %d: %d entries in %d slots", phase, x.n, len(x.slots))
	}
	// The same id in another job is another key.
	tk := &task{key: taskKey{"a", "same"}, job: jobs[0], hash: x.hashOf(jobs[0], "same")}
	x.insert(tk)
	if find(taskKey{"b", "same"}, jobs[1]) != nil || find(taskKey{"a", "same"}, jobs[0]) != tk {
		t.Fatal("ids are not scoped by job")
	}
}

// TestDeadlineQueueOrder pushes tasks mostly in deadline order (as a
// stream with one common wait does), some out of order (other waits, old
// first-seen times), removes some at random, and checks that the rest
// leave in exactly (nextAt, seq) order, and that both the list and the
// heap were used.
func TestDeadlineQueueOrder(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var q deadlineQueue
		var live []*task
		var seq uint64
		now := int64(0)
		usedHeap := false
		for step := 0; step < 3000; step++ {
			switch r := rng.IntN(10); {
			case r < 5:
				now += int64(rng.IntN(3))
				seq++
				at := now + 100
				switch rng.IntN(8) {
				case 0:
					at = now + int64(rng.IntN(200)) // another wait
				case 1:
					at = now + 100 - int64(rng.IntN(3)) // a tie or near miss
				}
				tk := &task{nextAt: at, seq: seq, state: stateQueued}
				q.push(tk)
				usedHeap = usedHeap || tk.heapIdx > 0
				live = append(live, tk)
			case r < 7 && len(live) > 0:
				i := rng.IntN(len(live))
				q.remove(live[i])
				live = slices.Delete(live, i, i+1)
			default:
				// Pop what is due at now + 50, checking the order.
				var prev *task
				for {
					tk, ok := q.min()
					if !ok || tk.nextAt > now+50 {
						break
					}
					if prev != nil && stepsBefore(tk, prev) {
						t.Fatalf("seed %d: popped (%d,%d) after (%d,%d)", seed, tk.nextAt, tk.seq, prev.nextAt, prev.seq)
					}
					q.remove(tk)
					live = slices.DeleteFunc(live, func(x *task) bool { return x == tk })
					prev = tk
				}
			}
			if q.len() != len(live) {
				t.Fatalf("seed %d step %d: queue holds %d, want %d", seed, step, q.len(), len(live))
			}
		}
		// Drain: exactly the live tasks, sorted.
		want := slices.Clone(live)
		slices.SortFunc(want, func(a, b *task) int {
			return cmp.Or(cmp.Compare(a.nextAt, b.nextAt), cmp.Compare(a.seq, b.seq))
		})
		for i, w := range want {
			got, ok := q.min()
			if !ok || got != w {
				t.Fatalf("seed %d: drain %d: got %v, want (%d,%d)", seed, i, got, w.nextAt, w.seq)
			}
			q.remove(got)
			if got.heapIdx != 0 || got.dlLink.linked() {
				t.Fatalf("seed %d: removed task still linked", seed)
			}
		}
		if _, ok := q.min(); ok || q.len() != 0 {
			t.Fatalf("seed %d: queue not empty after drain", seed)
		}
		if !usedHeap || q.list.n != 0 {
			t.Fatalf("seed %d: heap used %v, list left %d", seed, usedHeap, q.list.n)
		}
	}
}
