package placement_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

func cluster(nodes, slots, racks int) []placement.Node {
	ns := make([]placement.Node, nodes)
	for i := range ns {
		ns[i] = placement.Node{ID: "n" + strconv.Itoa(i), Rack: "r" + strconv.Itoa(i%racks), Slots: slots}
	}
	return ns
}

func randomTasks(n, nodes, rep int, seed uint64) []placement.Task {
	rng := rand.New(rand.NewPCG(seed, 1))
	ids := make([]string, nodes)
	for i := range ids {
		ids[i] = "n" + strconv.Itoa(i)
	}
	ts := make([]placement.Task, n)
	for i := range ts {
		o := rng.IntN(nodes)
		pref := make([]string, rep)
		for r := range pref {
			pref[r] = ids[(o+r*7)%nodes]
		}
		ts[i] = placement.Task{Job: "j", ID: "t" + strconv.Itoa(i), Prefer: pref, Wait: 3 * time.Second}
	}
	return ts
}

// BenchmarkDecisions measures Submit + Complete + Advance cycles on the
// seed's cluster (24 nodes x 12 slots) kept full: every op completes the
// oldest running task, submits a new one (Advance places it, or a waiter,
// on the freed slot) and advances the clock by 1ms. decisions/s counts
// placements. load=2 keeps as many tasks queued as running, so decisions
// come from the waiter indexes. The main runs collect assignments with
// AppendAdvance into a reused buffer (the allocation-free path);
// Advance/... runs the same cycle with Advance, which returns a fresh slice
// each time. The map baseline is the cost of the two map operations
// any scheduler needs per task (insert, delete).
func BenchmarkDecisions(b *testing.B) {
	b.Run("baseline=map", func(b *testing.B) {
		ts := randomTasks(1<<16, 24, 1, 1)
		m := map[[2]string]int{}
		b.ReportAllocs()
		cpu := cpuTime()
		for i := 0; b.Loop(); i++ {
			t := &ts[i&(len(ts)-1)]
			m[[2]string{t.Job, t.ID}] = i
			old := &ts[(i+len(ts)-288)&(len(ts)-1)]
			delete(m, [2]string{old.Job, old.ID})
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
	for _, load := range []int{1, 2} {
		for _, rep := range []int{1, 3} {
			b.Run(fmt.Sprintf("load=%d/rep=%d", load, rep), func(b *testing.B) {
				benchDecisions(b, load, rep, true)
			})
		}
	}
	b.Run("Advance/load=1/rep=1", func(b *testing.B) { benchDecisions(b, 1, 1, false) })
}

func benchDecisions(b *testing.B, load, rep int, appendAdvance bool) {
	p := newPlacer(b, placement.Config{}, cluster(24, 12, 4)...)
	ts := randomTasks(1<<16, 24, rep, 2)
	now := t0
	inflight := 24 * 12 * load
	// FIFO of running task indexes: a ring (at most 24 x 12 run at once).
	var running [1024]int
	head, tail := 0, 0
	placed := 0
	track := func(a *placement.Assignment) {
		i, _ := strconv.Atoi(a.Task[1:])
		running[tail&(len(running)-1)] = i
		tail++
		placed++
	}
	submit := func(i int) {
		a, ok, err := p.Submit(ts[i], now)
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			track(&a)
		}
	}
	for i := range inflight {
		submit(i)
	}
	next := inflight
	placed = 0
	var buf []placement.Assignment
	b.ReportAllocs()
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		i := running[head&(len(running)-1)]
		head++
		if _, err := p.Complete("j", ts[i].ID, placement.Outcome{LocalHit: 1}); err != nil {
			b.Fatal(err)
		}
		submit(next & (len(ts) - 1))
		next++
		if appendAdvance {
			buf = p.AppendAdvance(buf[:0], now)
		} else {
			buf = p.Advance(now)
		}
		for k := range buf {
			track(&buf[k])
		}
	}
	el, cpuEl := time.Since(start), cpuTime()-cpu
	b.ReportMetric(float64(placed)/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(placed)/cpuEl.Seconds(), "decisions/cpu-s")
	b.ReportMetric(float64(cpuEl)/float64(b.N), "cpu-ns/op")
	c, _ := p.Counters("")
	b.ReportMetric(c.DataLocalRatio(), "data-local")
}

// BenchmarkPlaceBatch places 100k tasks (preference lists of 3) on 1,000
// nodes in one call, on a fresh placer each time. slots=100 gives exactly
// as many free slots as tasks; slots=50 queues about half. ns/task is the
// figure to compare with the 10 us/task budget (100k in 1 s). The baseline
// is a greedy owner-first loop over a map of free slots with no indexes,
// no matching and no bookkeeping: the floor of any batch placer.
func BenchmarkPlaceBatch(b *testing.B) {
	const nTasks, nNodes = 100000, 1000
	ts := randomTasks(nTasks, nNodes, 3, 3)
	b.Run("baseline=greedy-map", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuTime()
		for b.Loop() {
			free := make(map[string]int, nNodes)
			for _, n := range cluster(nNodes, 100, 25) {
				free[n.ID] = n.Slots
			}
			out := make([]string, len(ts))
			for i, t := range ts {
				for _, id := range t.Prefer {
					if free[id] > 0 {
						free[id]--
						out[i] = id
						break
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nTasks, "ns/task")
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/nTasks, "cpu-ns/task")
	})
	for _, slots := range []int{100, 50} {
		b.Run(fmt.Sprintf("nodes=%d/slots=%d", nNodes, slots), func(b *testing.B) {
			b.ReportAllocs()
			var placed, dl int
			var spent, cpuSpent time.Duration
			for b.Loop() {
				b.StopTimer()
				p := newPlacer(b, placement.Config{}, cluster(nNodes, slots, 25)...)
				b.StartTimer()
				start, cpu := time.Now(), cpuTime()
				as, err := p.PlaceBatch(ts, t0)
				spent += time.Since(start)
				cpuSpent += cpuTime() - cpu
				if err != nil {
					b.Fatal(err)
				}
				placed, dl = len(as), 0
				for _, a := range as {
					if a.Locality == placement.DataLocal {
						dl++
					}
				}
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N)/nTasks, "ns/task")
			b.ReportMetric(float64(cpuSpent.Nanoseconds())/float64(b.N)/nTasks, "cpu-ns/task")
			b.ReportMetric(float64(placed), "placed")
			b.ReportMetric(float64(dl)/float64(max(placed, 1)), "data-local")
		})
	}
}
