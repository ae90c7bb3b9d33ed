package placement_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/placement"
)

var t0 = time.Unix(1000, 0)

func newPlacer(t testing.TB, cfg placement.Config, nodes ...placement.Node) *placement.Placer {
	t.Helper()
	p, err := placement.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SetNodes(nodes, t0); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  placement.Config
		want error
	}{
		{placement.Config{}, nil},
		{placement.DefaultConfig(), nil},
		{placement.Config{FirstSeenTTL: -1}, placement.ErrInvalidConfig},
		{placement.Config{FirstSeenMax: -1}, placement.ErrInvalidConfig},
		{placement.Config{MaxJobs: -1}, placement.ErrInvalidConfig},
		{placement.Config{MaxQueued: -1}, placement.ErrInvalidConfig},
	} {
		if _, err := placement.New(tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("New(%+v) = %v, want %v", tc.cfg, err, tc.want)
		}
	}
}

func TestWaitFromMillis(t *testing.T) {
	def := 3 * time.Second
	for _, tc := range []struct {
		ms   int64
		want time.Duration
	}{{0, def}, {-1, 0}, {-5000, 0}, {1500, 1500 * time.Millisecond}} {
		if got := placement.WaitFromMillis(tc.ms, def); got != tc.want {
			t.Errorf("WaitFromMillis(%d) = %v, want %v", tc.ms, got, tc.want)
		}
	}
}

func TestInvalidInput(t *testing.T) {
	p := newPlacer(t, placement.Config{}, placement.Node{ID: "n1", Slots: 1})
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"empty node id", second(p.UpsertNode(placement.Node{Slots: 1}, t0)), placement.ErrInvalidNode},
		{"negative slots", second(p.UpsertNode(placement.Node{ID: "x", Slots: -1}, t0)), placement.ErrInvalidNode},
		{"bad state", second(p.UpsertNode(placement.Node{ID: "x", State: 9}, t0)), placement.ErrInvalidNode},
		{"empty job", third(p.Submit(placement.Task{ID: "t"}, t0)), placement.ErrInvalidTask},
		{"empty id", third(p.Submit(placement.Task{Job: "j"}, t0)), placement.ErrInvalidTask},
		{"long prefer", third(p.Submit(placement.Task{Job: "j", ID: "t", Prefer: make([]string, placement.MaxPrefer+1)}, t0)), placement.ErrInvalidTask},
		{"empty prefer id", third(p.Submit(placement.Task{Job: "j", ID: "t", Prefer: []string{""}}, t0)), placement.ErrInvalidTask},
		{"batch with bad task", second(p.PlaceBatch([]placement.Task{{Job: "j", ID: "a"}, {Job: "j"}}, t0)), placement.ErrInvalidTask},
		{"unknown job", second(p.Complete("nope", "t", placement.Outcome{})), placement.ErrUnknownJob},
		{"negative outcome", second(p.Complete("j", "t", placement.Outcome{Miss: -1})), placement.ErrInvalidOutcome},
		{"bytes below parts", second(p.Complete("j", "t", placement.Outcome{Bytes: 1, Miss: 2})), placement.ErrInvalidOutcome},
		{"cancel unknown job", p.Cancel("nope", "t", t0), placement.ErrUnknownJob},
		{"counters unknown job", second(p.Counters("nope")), placement.ErrUnknownJob},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if p.Queued()+p.Running() != 0 {
		t.Errorf("rejected input left %d queued, %d running", p.Queued(), p.Running())
	}
	if err := p.Verify(); err != nil {
		t.Error(err)
	}
}

func second[A, B any](_ A, b B) B        { return b }
func third[A, B, C any](_ A, _ B, c C) C { return c }

func TestQueueFull(t *testing.T) {
	p := newPlacer(t, placement.Config{MaxQueued: 2}, placement.Node{ID: "n1", Slots: 1})
	for i, want := range []error{nil, nil, nil, placement.ErrQueueFull} {
		_, _, err := p.Submit(placement.Task{Job: "j", ID: fmt.Sprint(i), Prefer: []string{"n1"}, Wait: time.Hour}, t0)
		if !errors.Is(err, want) {
			t.Fatalf("submit %d: %v, want %v", i, err, want)
		}
	}
	if _, err := p.PlaceBatch([]placement.Task{{Job: "j", ID: "b", Prefer: []string{"n1"}}}, t0); !errors.Is(err, placement.ErrQueueFull) {
		t.Fatalf("batch: %v, want ErrQueueFull", err)
	}
	if p.Queued() != 2 || p.Running() != 1 {
		t.Errorf("queued %d running %d, want 2 and 1", p.Queued(), p.Running())
	}
}

func TestFirstSeenBounded(t *testing.T) {
	p := newPlacer(t, placement.Config{FirstSeenTTL: time.Minute, FirstSeenMax: 2}, placement.Node{ID: "n1", Slots: 1})
	sub := func(id string, at time.Time) placement.Assignment {
		t.Helper()
		if _, _, err := p.Submit(placement.Task{Job: "j", ID: id, Prefer: []string{"n1"}, Wait: time.Hour}, at); err != nil {
			t.Fatal(err)
		}
		return placement.Assignment{}
	}
	sub("hold", t0) // takes n1's only slot
	for _, id := range []string{"a", "b", "c"} {
		sub(id, t0)
		if err := p.Cancel("j", id, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// "a" was forgotten (FirstSeenMax 2); "b" is remembered (first seen at
	// t0+1s: the placer's clock had reached the first Cancel's time, and
	// earlier inputs are clamped); "c" expires (FirstSeenTTL).
	for _, tc := range []struct {
		id   string
		at   time.Time
		want time.Time
	}{
		{"a", t0.Add(10 * time.Second), t0.Add(10 * time.Second)},
		{"b", t0.Add(10 * time.Second), t0.Add(time.Second)},
		{"c", t0.Add(2 * time.Minute), t0.Add(2 * time.Minute)},
	} {
		sub(tc.id, tc.at)
		if _, err := p.Complete("j", "hold", placement.Outcome{}); err != nil {
			t.Fatal(err)
		}
		as := p.Advance(tc.at)
		if len(as) != 1 || as[0].Task != tc.id {
			t.Fatalf("%s: assignments %+v", tc.id, as)
		}
		if !as[0].Submitted.Equal(tc.want) {
			t.Errorf("%s: first seen %v, want %v", tc.id, as[0].Submitted.Sub(t0), tc.want.Sub(t0))
		}
		// tc.id now holds the slot; rename it "hold" for the next round.
		if err := p.Cancel("j", tc.id, tc.at); err != nil {
			t.Fatal(err)
		}
		sub("hold", tc.at)
	}
}

func TestJobsForgottenWhenIdle(t *testing.T) {
	p := newPlacer(t, placement.Config{MaxJobs: 3}, placement.Node{ID: "n1", Slots: 10})
	place := func(job string) {
		t.Helper()
		if _, _, err := p.Submit(placement.Task{Job: job, ID: "t", Prefer: []string{"n1"}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	place("a")
	place("b")
	place("c")
	place("d") // all running: nothing can be forgotten
	if got := len(p.Jobs()); got != 4 {
		t.Fatalf("%d jobs, want 4 (active jobs are never forgotten)", got)
	}
	if _, err := p.Complete("d", "t", placement.Outcome{Bytes: 10}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"b", "a"} { // b idles first
		if _, err := p.Complete(j, "t", placement.Outcome{Bytes: 10}); err != nil {
			t.Fatal(err)
		}
	}
	place("e") // 4 jobs >= 3: d and b, idle longest, are forgotten
	if _, err := p.Counters("d"); !errors.Is(err, placement.ErrUnknownJob) {
		t.Errorf("d (idle longest) not forgotten: %v", err)
	}
	if _, err := p.Counters("b"); !errors.Is(err, placement.ErrUnknownJob) {
		t.Errorf("b (idle longest) not forgotten: %v", err)
	}
	if _, err := p.Counters("a"); err != nil {
		t.Errorf("a: %v", err)
	}
	g, _ := p.Counters("")
	if g.DataLocal.Placed != 5 || g.DataLocal.Bytes != 30 {
		t.Errorf("global counters lost the forgotten job: %+v", g.DataLocal)
	}
	if err := p.Verify(); err != nil {
		t.Error(err)
	}
	// The forgotten jobs are reported once, in the order forgotten.
	if got := p.TakeForgotten(nil); !slices.Equal(got, []string{"d", "b"}) {
		t.Errorf("TakeForgotten = %q, want [d b]", got)
	}
	if got := p.TakeForgotten(nil); len(got) != 0 {
		t.Errorf("TakeForgotten again = %q, want none", got)
	}
}

// TestForgottenJobsBounded: a caller that never takes the forgotten jobs
// costs at most 2 x MaxJobs names, the latest.
func TestForgottenJobsBounded(t *testing.T) {
	p := newPlacer(t, placement.Config{MaxJobs: 2}, placement.Node{ID: "n1", Slots: 10})
	for i := range 10 {
		job := fmt.Sprint("j", i)
		if _, _, err := p.Submit(placement.Task{Job: job, ID: "t", Prefer: []string{"n1"}}, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(job, "t", placement.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.TakeForgotten(nil); !slices.Equal(got, []string{"j4", "j5", "j6", "j7"}) {
		t.Errorf("TakeForgotten = %q, want the latest forgotten, [j4 j5 j6 j7]", got)
	}
}

func TestExportImport(t *testing.T) {
	p := newPlacer(t, placement.Config{}, placement.Node{ID: "n1", Rack: "r", Slots: 2}, placement.Node{ID: "n2", Rack: "r", Slots: 1})
	for i, pref := range []string{"n1", "n1", "n1"} {
		if _, _, err := p.Submit(placement.Task{Job: "j", ID: fmt.Sprint(i), Prefer: []string{pref}, Wait: -1}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Complete("j", "0", placement.Outcome{LocalHit: 5, Miss: 5, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(p.Export())
	if err != nil {
		t.Fatal(err)
	}
	var st placement.State
	if err := json.Unmarshal(js, &st); err != nil {
		t.Fatal(err)
	}
	q := newPlacer(t, placement.Config{})
	if err := q.Import(st); err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"", "j"} {
		a, _ := p.Counters(job)
		b, _ := q.Counters(job)
		// Running tasks are not carried: they become lost.
		for _, l := range placement.Localities {
			a.Level(l).Lost += a.Level(l).Running
			a.Level(l).Running = 0
		}
		if a != b {
			t.Errorf("job %q: imported %+v, want %+v", job, b, a)
		}
	}
	if err := q.Import(st); !errors.Is(err, placement.ErrNotEmpty) {
		t.Errorf("second import: %v, want ErrNotEmpty", err)
	}
	bad := st
	bad.Version = 99
	if err := newPlacer(t, placement.Config{}).Import(bad); !errors.Is(err, placement.ErrInvalidState) {
		t.Errorf("bad version: %v", err)
	}
	bad = st
	bad.Global.DataLocal.Placed++
	if err := newPlacer(t, placement.Config{}).Import(bad); !errors.Is(err, placement.ErrInvalidState) {
		t.Errorf("counters that do not add up: %v", err)
	}
}

func TestStrings(t *testing.T) {
	for v, want := range map[fmt.Stringer]string{
		placement.DataLocal: "DATA_LOCAL", placement.RackLocal: "RACK_LOCAL", placement.OtherLocal: "OTHER_LOCAL",
		placement.Locality(9): "Locality(9)", placement.Alive: "alive", placement.Draining: "draining",
		placement.Dead: "dead", placement.NodeState(7): "NodeState(7)",
	} {
		if got := v.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestTimeClamped: a time earlier than one already seen is treated as the
// latest seen, so waits never run backwards.
func TestTimeClamped(t *testing.T) {
	p := newPlacer(t, placement.Config{}, placement.Node{ID: "n1", Rack: "r", Slots: 1}, placement.Node{ID: "n2", Rack: "r", Slots: 1})
	p.Advance(t0.Add(10 * time.Second))
	if _, _, err := p.Submit(placement.Task{Job: "j", ID: "a", Prefer: []string{"n1"}}, t0); err != nil {
		t.Fatal(err)
	}
	if _, placed, _ := p.Submit(placement.Task{Job: "j", ID: "b", Prefer: []string{"n1"}, Wait: time.Second}, t0); placed {
		t.Fatal("b placed at once")
	}
	at, ok := p.NextDeadline()
	if want := t0.Add(11 * time.Second); !ok || !at.Equal(want) {
		t.Errorf("next deadline %v %v, want %v", at, ok, want)
	}
}

// TestPendingPlacement: a placement made while Submit catches up is not
// known to the caller until Advance returns it; until then the task behaves
// as queued: Complete refuses it, Cancel cancels it as queued, and a node
// that dies or drains puts it back in the queue instead of reporting it
// lost.
func TestPendingPlacement(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(p *placement.Placer) error
		// after the action and an Advance
		wantAssigned, wantQueued, wantPlaced, wantLost int
	}{
		{"advance", func(p *placement.Placer) error { return nil }, 1, 0, 3, 0},
		{"cancel", func(p *placement.Placer) error { return p.Cancel("j", "b", t0) }, 0, 0, 2, 0},
		{"kill", func(p *placement.Placer) error {
			lost, err := p.UpsertNode(placement.Node{ID: "n1", Rack: "r", Slots: 1, State: placement.Dead}, t0)
			if len(lost) != 0 {
				return fmt.Errorf("lost %v", lost)
			}
			return err
		}, 0, 1, 2, 0},
		{"drain", func(p *placement.Placer) error {
			_, err := p.UpsertNode(placement.Node{ID: "n1", Rack: "r", Slots: 1, State: placement.Draining}, t0)
			return err
		}, 0, 1, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlacer(t, placement.Config{}, placement.Node{ID: "n1", Rack: "r", Slots: 1}, placement.Node{ID: "n2", Rack: "r", Slots: 1})
			submit := func(id, pref string) bool {
				t.Helper()
				_, placed, err := p.Submit(placement.Task{Job: "j", ID: id, Prefer: []string{pref}, Wait: time.Hour}, t0)
				if err != nil {
					t.Fatal(err)
				}
				return placed
			}
			submit("a", "n1")
			submit("b", "n1") // queued behind a
			if _, err := p.Complete("j", "a", placement.Outcome{}); err != nil {
				t.Fatal(err)
			}
			// No Advance: c's Submit catches up and places b on n1 (pending).
			if !submit("c", "n2") {
				t.Fatal("c not placed")
			}
			if _, err := p.Complete("j", "b", placement.Outcome{}); !errors.Is(err, placement.ErrNotPlaced) {
				t.Fatalf("Complete of a pending task: %v, want ErrNotPlaced", err)
			}
			if err := tc.act(p); err != nil {
				t.Fatal(err)
			}
			as := p.Advance(t0)
			c, _ := p.Counters("j")
			if len(as) != tc.wantAssigned || p.Queued() != tc.wantQueued || c.Total().Placed != int64(tc.wantPlaced) || c.Total().Lost != int64(tc.wantLost) {
				t.Errorf("assigned %v, queued %d, placed %d, lost %d; want %d, %d, %d, %d",
					as, p.Queued(), c.Total().Placed, c.Total().Lost, tc.wantAssigned, tc.wantQueued, tc.wantPlaced, tc.wantLost)
			}
			if err := p.Verify(); err != nil {
				t.Error(err)
			}
		})
	}
}
