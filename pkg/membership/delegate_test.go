package membership

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func testDelegate(t *testing.T, meta NodeMeta) *delegate {
	t.Helper()
	d, err := newDelegate(meta.withDefaults(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func node(t *testing.T, meta NodeMeta, port uint16, state memberlist.NodeStateType) *memberlist.Node {
	t.Helper()
	return &memberlist.Node{
		Name:  meta.ID,
		Addr:  net.ParseIP("127.0.0.1"),
		Port:  port,
		Meta:  must(meta.withDefaults().MarshalBinary()),
		State: state,
	}
}

func cacheMeta(id string) NodeMeta { return NodeMeta{ID: id, GRPCAddr: "127.0.0.1:7070"} }

func TestNotifyAlive(t *testing.T) {
	d := testDelegate(t, cacheMeta("self"))
	small := cacheMeta("small")
	small.BlockSize = 1 << 20
	future := cacheMeta("future")
	future.ProtocolVersion = ProtocolVersion + 1
	obs := NodeMeta{ID: "obs", Role: RoleObserver}
	ownerOnly := cacheMeta("owner-only")
	ownerOnly.Replication = 1
	tests := []struct {
		name string
		n    *memberlist.Node
		want error // nil: accepted
	}{
		{"replication", node(t, ownerOnly, 1, memberlist.StateAlive), ErrIncompatible},
		{"peer", node(t, cacheMeta("p"), 1, memberlist.StateAlive), nil},
		{"observer without block size", node(t, obs, 1, memberlist.StateAlive), nil},
		{"self, even with odd meta", &memberlist.Node{Name: "self", Meta: []byte("junk")}, nil},
		{"block size", node(t, small, 1, memberlist.StateAlive), ErrIncompatible},
		{"protocol", node(t, future, 1, memberlist.StateAlive), ErrIncompatible},
		{"no meta", &memberlist.Node{Name: "x"}, ErrCorruptMeta},
		{"garbage meta", &memberlist.Node{Name: "x", Meta: []byte{1, 2, 3}}, ErrCorruptMeta},
		{"name differs from meta id", &memberlist.Node{Name: "x", Meta: must(cacheMeta("y").withDefaults().MarshalBinary())}, ErrInvalidMeta},
	}
	// A Join in flight to some other seed: NotifyAlive is not a join and
	// records nothing in it.
	other := d.beginJoin([]string{"127.0.0.1:7"})
	for _, tc := range tests {
		err := d.NotifyAlive(tc.n)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	d.endJoin(other)
	if len(other.refusals) != 0 || len(other.self) != 0 {
		t.Errorf("recorded outside a join: refusals %v, self %v", other.refusals, other.self)
	}
}

func TestNotifyMerge(t *testing.T) {
	d := testDelegate(t, cacheMeta("self"))
	d.NotifyJoin(node(t, cacheMeta("self"), 100, memberlist.StateAlive)) // learns its own address
	d.NotifyJoin(node(t, cacheMeta("known"), 200, memberlist.StateAlive))
	small := cacheMeta("small")
	small.BlockSize = 1 << 20
	tests := []struct {
		name  string
		peers []*memberlist.Node
		want  error
	}{
		{"compatible", []*memberlist.Node{node(t, cacheMeta("a"), 1, memberlist.StateAlive), node(t, cacheMeta("b"), 2, memberlist.StateSuspect)}, nil},
		{"knows us at our address", []*memberlist.Node{node(t, cacheMeta("self"), 100, memberlist.StateAlive)}, nil},
		{"known member at its address", []*memberlist.Node{node(t, cacheMeta("known"), 200, memberlist.StateAlive)}, nil},
		{"dead misfit is ignored", []*memberlist.Node{node(t, small, 1, memberlist.StateDead)}, nil},
		{"left duplicate is ignored", []*memberlist.Node{node(t, cacheMeta("self"), 999, memberlist.StateLeft)}, nil},
		{"live misfit", []*memberlist.Node{node(t, cacheMeta("a"), 1, memberlist.StateAlive), node(t, small, 2, memberlist.StateAlive)}, ErrIncompatible},
		{"our id elsewhere", []*memberlist.Node{node(t, cacheMeta("self"), 999, memberlist.StateAlive)}, ErrDuplicateID},
		{"known id elsewhere", []*memberlist.Node{node(t, cacheMeta("known"), 999, memberlist.StateSuspect)}, ErrDuplicateID},
		{"corrupt meta", []*memberlist.Node{{Name: "x", Meta: []byte{9}, State: memberlist.StateAlive}}, ErrCorruptMeta},
	}
	other := d.beginJoin([]string{"127.0.0.1:7"}) // a Join in flight to another seed
	for _, tc := range tests {
		var seeds []string // this node's own Join: the list is a seed's
		for _, p := range tc.peers {
			seeds = append(seeds, p.Address())
		}
		at := d.beginJoin(seeds)
		err := d.NotifyMerge(tc.peers)
		d.endJoin(at)
		refusals := at.refusals
		if tc.want == nil {
			if err != nil || len(refusals) != 0 {
				t.Errorf("%s: got %v (refusals %v), want accepted", tc.name, err, refusals)
			}
			continue
		}
		if !errors.Is(err, tc.want) || len(refusals) != 1 || refusals[0] != err {
			t.Errorf("%s: got %v (refusals %v), want %v recorded once", tc.name, err, refusals, tc.want)
		}
	}
	// Outside a Join the wording is the admitting side's, and nothing is
	// recorded.
	err := d.NotifyMerge([]*memberlist.Node{node(t, small, 2, memberlist.StateAlive)})
	var ie *IncompatibleError
	if !errors.As(err, &ie) || ie.Joining || ie.Peer != "small" {
		t.Errorf("admitting: got %v", err)
	}
	d.endJoin(other)
	if len(other.refusals) != 0 || len(other.self) != 0 {
		t.Errorf("recorded in another seed's Join: refusals %v, self %v", other.refusals, other.self)
	}
}

// TestNotifyMergeSelfRecords: what a seed's list says about this node's
// own id, which Join reads to tell a restart at a new address (see
// Membership.Join).
func TestNotifyMergeSelfRecords(t *testing.T) {
	d := testDelegate(t, cacheMeta("self"))
	d.NotifyJoin(node(t, cacheMeta("self"), 100, memberlist.StateAlive))
	const self = "127.0.0.1:100"
	seed := node(t, cacheMeta("seed"), 1, memberlist.StateAlive)
	tests := []struct {
		name      string
		us        *memberlist.Node // this id in the seed's list, or nil
		wantErr   error
		previous  bool // a previous incarnation elsewhere
		accepted  bool // the seed lists this node at its address
		wantState memberlist.NodeStateType
	}{
		{"first contact", nil, nil, false, false, 0},
		{"listed here", node(t, cacheMeta("self"), 100, memberlist.StateAlive), nil, false, true, 0},
		{"suspect here", node(t, cacheMeta("self"), 100, memberlist.StateSuspect), nil, false, true, 0},
		{"dead here (restart at the same address)", node(t, cacheMeta("self"), 100, memberlist.StateDead), nil, false, false, 0},
		{"dead elsewhere", node(t, cacheMeta("self"), 999, memberlist.StateDead), nil, true, false, memberlist.StateDead},
		{"left elsewhere", node(t, cacheMeta("self"), 999, memberlist.StateLeft), nil, true, false, memberlist.StateLeft},
		{"alive elsewhere", node(t, cacheMeta("self"), 999, memberlist.StateAlive), ErrDuplicateID, true, false, memberlist.StateAlive},
	}
	for _, tc := range tests {
		peers := []*memberlist.Node{seed}
		if tc.us != nil {
			peers = append(peers, tc.us)
		}
		at := d.beginJoin([]string{seed.Address()})
		err := d.NotifyMerge(peers)
		d.endJoin(at)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.wantErr)
		}
		prev, ok := at.previous(self)
		if ok != tc.previous || ok && (prev.addr != "127.0.0.1:999" || prev.state != tc.wantState) {
			t.Errorf("%s: previous = %+v, %v; want %v in state %v", tc.name, prev, ok, tc.previous, tc.wantState)
		}
		if got := at.accepted(self); got != tc.accepted {
			t.Errorf("%s: accepted = %v, want %v", tc.name, got, tc.accepted)
		}
	}
	// One list per merge; a Join is accepted only if every list it merged
	// lists this node.
	at := d.beginJoin([]string{seed.Address()})
	_ = d.NotifyMerge([]*memberlist.Node{seed, node(t, cacheMeta("self"), 100, memberlist.StateAlive)})
	_ = d.NotifyMerge([]*memberlist.Node{seed, node(t, cacheMeta("self"), 999, memberlist.StateDead)})
	d.endJoin(at)
	if len(at.self) != 2 || at.accepted(self) {
		t.Errorf("two lists, one stale: self %+v, accepted %v; want 2 records, not accepted", at.self, at.accepted(self))
	}
}

func TestEventsMaintainTheTable(t *testing.T) {
	d := testDelegate(t, cacheMeta("self"))
	seq0 := d.currentSeq()
	d.NotifyJoin(node(t, cacheMeta("self"), 100, memberlist.StateAlive))
	d.NotifyJoin(node(t, cacheMeta("b"), 2, memberlist.StateAlive))
	d.NotifyJoin(node(t, cacheMeta("a"), 1, memberlist.StateAlive))
	drained := cacheMeta("b")
	drained.State = StateDraining
	d.NotifyUpdate(node(t, drained, 2, memberlist.StateAlive))
	// Many events with nobody consuming kick: none of them may block.
	for range 100 {
		d.NotifyUpdate(node(t, drained, 2, memberlist.StateAlive))
	}
	d.NotifyJoin(&memberlist.Node{Name: "junk", Meta: []byte("junk")}) // kept out
	ms, seq := d.snapshot()
	if seq != seq0+105 {
		t.Errorf("seq advanced by %d, want 105", seq-seq0)
	}
	if len(ms) != 3 || ms[0].ID != "a" || ms[1].ID != "b" || ms[2].ID != "self" {
		t.Fatalf("table %+v, want a, b, self", ms)
	}
	if ms[1].State != StateDraining || ms[1].GossipAddr != "127.0.0.1:2" {
		t.Errorf("b: %+v", ms[1])
	}
	if p := d.selfAddr.Load(); p == nil || *p != "127.0.0.1:100" {
		t.Errorf("self address %v", p)
	}
	d.NotifyLeave(node(t, cacheMeta("a"), 1, memberlist.StateDead))
	if ms, _ := d.snapshot(); len(ms) != 2 || ms[0].ID != "b" {
		t.Errorf("after leave: %+v", ms)
	}
	select {
	case <-d.kick:
	default:
		t.Error("no kick pending after changes")
	}
}

func TestNodeMetaHook(t *testing.T) {
	d := testDelegate(t, cacheMeta("self"))
	b := d.NodeMeta(memberlist.MetaMaxSize)
	var m NodeMeta
	if err := m.UnmarshalBinary(b); err != nil || m.ID != "self" {
		t.Fatalf("NodeMeta: %+v, %v", m, err)
	}
	if got := d.NodeMeta(3); got != nil {
		t.Errorf("NodeMeta(3) = %x, want nil (never a truncated encoding)", got)
	}
}

// TestNotifyConflictAfterDeath: memberlist reports a conflict when a
// member that died comes back at a new address before DeadNodeReclaimTime;
// that is logged as such, once, not as two processes claiming one id.
func TestNotifyConflictAfterDeath(t *testing.T) {
	var buf bytes.Buffer
	d, err := newDelegate(cacheMeta("self").withDefaults(), slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	old, back := node(t, cacheMeta("c"), 1, memberlist.StateDead), node(t, cacheMeta("c"), 2, memberlist.StateAlive)
	d.NotifyJoin(old)
	d.NotifyLeave(old)
	d.NotifyConflict(old, back)
	d.NotifyConflict(old, back)
	out := buf.String()
	if strings.Count(out, "level=INFO") != 1 || !strings.Contains(out, "back at a new address") || strings.Contains(out, "claim one node id") {
		t.Errorf("got log:\n%s\nwant one INFO line saying c is back at a new address", out)
	}
	buf.Reset()
	d.NotifyJoin(back) // c is back: a later conflict is two processes again
	d.NotifyConflict(back, old)
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "claim one node id") {
		t.Errorf("conflict with a live member: got log:\n%s\nwant a WARN about two processes", buf.String())
	}
}
