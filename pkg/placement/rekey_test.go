package placement_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

// TestRekey checks what a queued task's placement says after the ring
// changed while it waited: the node, owner and locality of the new ring,
// the wait counted from its first-seen time (testdata/rekey.txt shows the
// same cases as a script).
func TestRekey(t *testing.T) {
	w := 3 * time.Second
	for _, tc := range []struct {
		name string
		// change applies the membership change at t0+1s (before Rekey).
		change    func(p *placement.Placer, now time.Time)
		prefer    []string // t2's new list
		free      string   // node that completes its task at t0+1s, if any
		wantNode  string
		wantOwner string
		wantLoc   placement.Locality
		wantWait  time.Duration
	}{
		{
			name: "node joins and owns the block",
			change: func(p *placement.Placer, now time.Time) {
				mustUpsert(t, p, placement.Node{ID: "n2", Rack: "r1", Slots: 1}, now)
			},
			prefer: []string{"n2"}, wantNode: "n2", wantOwner: "n2", wantLoc: placement.DataLocal, wantWait: time.Second,
		},
		{
			name: "node joins as replica",
			change: func(p *placement.Placer, now time.Time) {
				mustUpsert(t, p, placement.Node{ID: "n2", Rack: "r2", Slots: 1}, now)
			},
			prefer: []string{"n1", "n2"}, wantNode: "n2", wantOwner: "n1", wantLoc: placement.DataLocal, wantWait: time.Second,
		},
		{
			// Without Rekey, t2 (at rack level since n1 left) would take
			// n3's slot as RACK_LOCAL.
			name:   "owner leaves, successor owns the block",
			change: func(p *placement.Placer, now time.Time) { p.RemoveNode("n1", now) },
			prefer: []string{"n3"}, free: "n3", wantNode: "n3", wantOwner: "n3", wantLoc: placement.DataLocal, wantWait: time.Second,
		},
		{
			// The new owner is busy: t2 waits for it until its original
			// data-local deadline (3s from first seen), then takes a slot
			// in the new owner's rack r2.
			name: "new owner busy, wait not restarted",
			change: func(p *placement.Placer, now time.Time) {
				mustUpsert(t, p, placement.Node{ID: "n5", Rack: "r2", Slots: 1}, now)
			},
			prefer: []string{"n4"}, wantNode: "n5", wantOwner: "n4", wantLoc: placement.RackLocal, wantWait: w,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlacer(t, placement.Config{},
				placement.Node{ID: "n1", Rack: "r1", Slots: 1},
				placement.Node{ID: "n3", Rack: "r1", Slots: 1},
				placement.Node{ID: "n4", Rack: "r2", Slots: 1})
			for i, n := range []string{"n1", "n3", "n4"} {
				if _, placed, err := p.Submit(placement.Task{Job: "j", ID: fmt.Sprint("busy", i), Prefer: []string{n}, Wait: w}, t0); err != nil || !placed {
					t.Fatalf("submit busy%d: placed %v, err %v", i, placed, err)
				}
			}
			if _, placed, err := p.Submit(placement.Task{Job: "j", ID: "t2", Prefer: []string{"n1"}, Wait: w}, t0); err != nil || placed {
				t.Fatalf("submit t2: placed %v, err %v; want queued", placed, err)
			}
			now := t0.Add(time.Second)
			tc.change(p, now)
			if n, err := p.Rekey([]placement.Rekey{{Job: "j", ID: "t2", Prefer: tc.prefer}}, now); err != nil || n != 1 {
				t.Fatalf("Rekey = %d, %v; want 1, nil", n, err)
			}
			if tc.free != "" {
				if _, err := p.Complete("j", "busy1", placement.Outcome{}); err != nil {
					t.Fatal(err)
				}
			}
			as := p.Advance(now)
			if len(as) == 0 {
				as = p.Advance(t0.Add(w))
			}
			if err := p.Verify(); err != nil {
				t.Fatal(err)
			}
			if len(as) != 1 {
				t.Fatalf("got assignments %+v, want one for t2", as)
			}
			a := as[0]
			if a.Node != tc.wantNode || a.Owner != tc.wantOwner || a.Locality != tc.wantLoc || a.Waited() != tc.wantWait {
				t.Errorf("got t2 on %s (owner %s) %v after %v, want on %s (owner %s) %v after %v",
					a.Node, a.Owner, a.Locality, a.Waited(), tc.wantNode, tc.wantOwner, tc.wantLoc, tc.wantWait)
			}
			c, _ := p.Counters("j")
			if got := c.Level(tc.wantLoc).Placed; got < 1 {
				t.Errorf("got %v placed %d, want the placement counted there", tc.wantLoc, got)
			}
		})
	}
}

func mustUpsert(t *testing.T, p *placement.Placer, nd placement.Node, now time.Time) {
	t.Helper()
	if _, err := p.UpsertNode(nd, now); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRekey measures re-keying every queued task once (a ring change
// while q tasks wait on a full cluster), per task.
func BenchmarkRekey(b *testing.B) {
	for _, q := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("queued=%d", q), func(b *testing.B) {
			const nodes = 64
			var ns []placement.Node
			for i := range nodes {
				ns = append(ns, placement.Node{ID: fmt.Sprint("n", i), Rack: fmt.Sprint("r", i%4), Slots: 1})
			}
			p := newPlacer(b, placement.Config{MaxQueued: 2 * q}, ns...)
			ups := [2][]placement.Rekey{}
			for i := range q + nodes {
				id := fmt.Sprint("t", i)
				if _, _, err := p.Submit(placement.Task{Job: "j", ID: id, Prefer: []string{ns[i%nodes].ID}, Wait: time.Hour}, t0); err != nil {
					b.Fatal(err)
				}
				ups[0] = append(ups[0], placement.Rekey{Job: "j", ID: id, Prefer: []string{ns[(i+1)%nodes].ID}})
				ups[1] = append(ups[1], placement.Rekey{Job: "j", ID: id, Prefer: []string{ns[i%nodes].ID}})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := p.Rekey(ups[i%2], t0); err != nil {
					b.Fatal(err)
				}
				p.Advance(t0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*q), "ns/task")
		})
	}
}
