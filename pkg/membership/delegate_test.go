package membership

import (
	"errors"
	"log/slog"
	"net"
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
	for _, tc := range tests {
		err := d.NotifyAlive(tc.n)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// NotifyAlive never records join refusals: it is not a join.
	if r := d.endJoinForTest(); len(r) != 0 {
		t.Errorf("refusals recorded outside a join: %v", r)
	}
}

func (d *delegate) endJoinForTest() []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refusals
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
	for _, tc := range tests {
		var seeds []string // this node's own Join: the list is a seed's
		for _, p := range tc.peers {
			seeds = append(seeds, p.Address())
		}
		d.beginJoin(seeds)
		err := d.NotifyMerge(tc.peers)
		refusals := d.endJoin(seeds)
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
	if r := d.endJoinForTest(); len(r) != 0 {
		t.Errorf("refusals recorded outside a join: %v", r)
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
