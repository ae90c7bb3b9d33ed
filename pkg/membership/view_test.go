package membership

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/locuscache/locus/pkg/ring"
)

func member(id, rack string, state State, role Role) Member {
	m := NodeMeta{ID: id, Rack: rack, State: state, Role: role}
	if role != RoleObserver {
		m.GRPCAddr = "127.0.0.1:7070"
	}
	return Member{NodeMeta: m.withDefaults(), GossipAddr: "127.0.0.1:7946"}
}

// ringKey is the brute-force reference for what the epoch must capture: the
// sorted (id, rack) pairs of the cache members.
func ringKey(ms []Member) string {
	var parts []string
	for _, m := range ms {
		if !m.IsObserver() {
			parts = append(parts, m.ID+"\x00"+m.Rack)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x01")
}

func randomMembers(r *rand.Rand) []Member {
	var ms []Member
	for i := range 6 {
		if r.IntN(2) == 0 {
			continue
		}
		ms = append(ms, member(fmt.Sprintf("n%d", i), []string{"", "r1", "r2"}[r.IntN(3)],
			[]State{StateAlive, StateDraining}[r.IntN(2)], []Role{RoleCache, RoleCache, RoleObserver}[r.IntN(3)]))
	}
	return ms
}

// TestEpochIsAFunctionOfRingMembership: across random memberships, two
// views have equal epochs exactly when their ring members (ids and racks of
// cache nodes) are equal; states and observers do not matter; input order
// does not matter.
func TestEpochIsAFunctionOfRingMembership(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	seen := map[uint64]string{}
	cfg := ring.Config{VNodes: 4} // the epoch ignores the ring config; keep rings cheap
	for i := range 3000 {
		ms := randomMembers(r)
		v, err := NewView(ms, cfg)
		if err != nil {
			t.Fatal(err)
		}
		key := ringKey(ms)
		if prev, ok := seen[v.Epoch]; ok && prev != key {
			t.Fatalf("case %d: epoch %016x for both %q and %q", i, v.Epoch, prev, key)
		}
		seen[v.Epoch] = key
		if (v.Epoch == 0) != (key == "") {
			t.Fatalf("case %d: epoch %d for ring members %q", i, v.Epoch, key)
		}
		if (v.Ring == nil) != (key == "") {
			t.Fatalf("case %d: ring %v for ring members %q", i, v.Ring, key)
		}
		r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		if v2, _ := NewView(ms, cfg); v2.Epoch != v.Epoch {
			t.Fatalf("case %d: order changed the epoch", i)
		}
	}
	distinct := map[string]bool{}
	for _, k := range seen {
		distinct[k] = true
	}
	if len(distinct) != len(seen) {
		t.Fatalf("%d epochs for %d ring memberships", len(seen), len(distinct))
	}
	for e := range seen {
		if e > 1<<53 {
			t.Fatalf("epoch %#x is above 2^53: a JSON reader that decodes numbers as doubles reads it inexactly", e)
		}
	}
	t.Logf("%d distinct ring memberships, %d distinct epochs", len(distinct), len(seen))
}

func TestEpochIsStable(t *testing.T) {
	// A golden value: the epoch is part of the wire contract (the scheduler
	// returns it as ring_epoch, members compare it), so its definition must
	// not drift silently.
	nodes := []ring.Node{{ID: "n1", Rack: "r1", Weight: 1}, {ID: "n2", Rack: "r1", Weight: 1}}
	// (0xadded19ba6bcadd2 before it kept 53 bits.)
	if got, want := ringEpoch(nodes), uint64(0x1ed19ba6bcadd2); got != want {
		t.Errorf("ringEpoch = %#x, want %#x", got, want)
	}
	// Length prefixes keep ("ab","c") and ("a","bc") apart.
	a := ringEpoch([]ring.Node{{ID: "ab", Rack: "c", Weight: 1}})
	b := ringEpoch([]ring.Node{{ID: "a", Rack: "bc", Weight: 1}})
	if a == b {
		t.Error("id/rack boundary is ambiguous")
	}
}

func TestBuildViewReusesRing(t *testing.T) {
	ms := []Member{member("a", "r1", StateAlive, RoleCache), member("b", "r1", StateAlive, RoleCache)}
	v1, err := buildView(ms, 1, nil, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// b drains and an observer joins: same ring, same epoch, next generation.
	ms2 := []Member{ms[0], member("b", "r1", StateDraining, RoleCache), member("s", "", StateAlive, RoleObserver)}
	v2, err := buildView(ms2, 2, v1, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Ring != v1.Ring || v2.Epoch != v1.Epoch || v2.Generation != v1.Generation+1 {
		t.Errorf("drain: ring reused %v, epochs %x/%x, generations %d/%d", v2.Ring == v1.Ring, v1.Epoch, v2.Epoch, v1.Generation, v2.Generation)
	}
	// c joins: new ring.
	v3, err := buildView(append(ms2, member("c", "r2", StateAlive, RoleCache)), 3, v2, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if v3.Ring == v2.Ring || v3.Epoch == v2.Epoch || v3.Ring.Len() != 3 {
		t.Errorf("join: ring %v (len %d), epochs %x/%x", v3.Ring == v2.Ring, v3.Ring.Len(), v2.Epoch, v3.Epoch)
	}
}

func TestViewAccessors(t *testing.T) {
	v, err := NewView([]Member{
		member("c", "r2", StateAlive, RoleCache),
		member("a", "r1", StateDraining, RoleCache),
		member("s", "", StateAlive, RoleObserver),
	}, ring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range v.Members {
		ids = append(ids, m.ID)
	}
	if fmt.Sprint(ids) != "[a c s]" {
		t.Errorf("members %v, want sorted [a c s]", ids)
	}
	for _, tc := range []struct {
		id        string
		ok        bool
		placeable bool
	}{{"a", true, false}, {"c", true, true}, {"s", true, false}, {"b", false, false}, {"", false, false}, {"zz", false, false}} {
		m, ok := v.Member(tc.id)
		if ok != tc.ok || (ok && (m.ID != tc.id || m.Placeable() != tc.placeable)) {
			t.Errorf("Member(%q) = %+v, %v; want ok=%v placeable=%v", tc.id, m, ok, tc.ok, tc.placeable)
		}
	}
	if v.Ring.Len() != 2 {
		t.Errorf("ring has %d nodes, want the 2 cache nodes (draining included)", v.Ring.Len())
	}
	if v.BlockSize() != DefaultBlockSize || v.Generation != 1 {
		t.Errorf("BlockSize %d generation %d", v.BlockSize(), v.Generation)
	}
	if v.Replication() != DefaultReplication {
		t.Errorf("Replication %d, want the cache nodes' default %d", v.Replication(), DefaultReplication)
	}
	obsOnly, _ := NewView([]Member{member("s", "", StateAlive, RoleObserver)}, ring.Config{})
	if obsOnly.BlockSize() != 0 || obsOnly.Replication() != 0 || obsOnly.Ring != nil || obsOnly.Epoch != 0 {
		t.Errorf("observers only: block size %d replication %d ring %v epoch %d", obsOnly.BlockSize(), obsOnly.Replication(), obsOnly.Ring, obsOnly.Epoch)
	}
	empty, err := NewView(nil, ring.Config{})
	if err != nil || empty.Ring != nil || empty.Epoch != 0 || len(empty.Members) != 0 {
		t.Errorf("empty view: %+v, %v", empty, err)
	}
	if _, ok := empty.Member("a"); ok {
		t.Error("empty view has a member")
	}
}

// TestViewReplication: the cache members' replication wins over an
// observer's; members that declare none are skipped.
func TestViewReplication(t *testing.T) {
	withRepl := func(m Member, r int) Member { m.Replication = r; return m }
	obs := member("s", "", StateAlive, RoleObserver)
	old := member("a", "", StateAlive, RoleCache)
	old.Replication = 0 // an earlier release: NewView's defaults would fill it
	for _, tc := range []struct {
		name    string
		members []Member
		want    int
	}{
		{"none", nil, 0},
		{"cache default", []Member{member("a", "", StateAlive, RoleCache)}, DefaultReplication},
		{"cache 3", []Member{withRepl(member("b", "", StateAlive, RoleCache), 3)}, 3},
		{"observer only", []Member{withRepl(obs, 4)}, 4},
		{"cache over observer", []Member{withRepl(obs, 4), withRepl(member("t", "", StateAlive, RoleCache), 1)}, 1},
		{"skips undeclared", []Member{old, withRepl(member("b", "", StateAlive, RoleCache), 3)}, 3},
	} {
		// Built by hand: NewView fills a cache member's zero replication.
		v := &View{Members: tc.members}
		if got := v.Replication(); got != tc.want {
			t.Errorf("%s: Replication() = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestCachelessNodesOwnNothing: a cache member that announces no capacity
// (its cache passes every read through: no slab fitted on its disk and it
// has no memory tier) owns no blocks while another member has a cache, so
// its share of the blocks is cached elsewhere instead of never; it stays a
// member (tasks may still run there). When no member has a cache, all
// own blocks as before (placement still spreads tasks by the ring).
// Was: every cache member was in the ring whatever its capacity.
func TestCachelessNodesOwnNothing(t *testing.T) {
	withCap := func(m Member, c int64) Member { m.CapacityBytes = c; return m }
	a, b, c := member("a", "r1", StateAlive, RoleCache), member("b", "r1", StateAlive, RoleCache), member("c", "r2", StateDraining, RoleCache)
	for _, tc := range []struct {
		name    string
		members []Member
		want    []string
	}{
		{"one cacheless", []Member{withCap(a, 1<<30), withCap(b, 0), withCap(c, 1<<30)}, []string{"a", "c"}},
		{"only one has a cache", []Member{withCap(a, 0), withCap(b, 1<<20), withCap(c, 0)}, []string{"b"}},
		{"none has a cache", []Member{withCap(a, 0), withCap(b, 0)}, []string{"a", "b"}},
		{"all have", []Member{withCap(a, 1), withCap(b, 2)}, []string{"a", "b"}},
	} {
		v, err := NewView(tc.members, ring.Config{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, n := range v.Ring.Nodes() {
			got = append(got, n.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: ring nodes %v, want %v", tc.name, got, tc.want)
		}
		if len(v.Members) != len(tc.members) {
			t.Errorf("%s: %d members, want all %d", tc.name, len(v.Members), len(tc.members))
		}
	}
}

func TestNewViewErrors(t *testing.T) {
	a := member("a", "", StateAlive, RoleCache)
	if _, err := NewView([]Member{a, a}, ring.Config{}); !errors.Is(err, ErrDuplicateID) {
		t.Errorf("duplicate: %v", err)
	}
	bad := a
	bad.GRPCAddr = "nope"
	if _, err := NewView([]Member{bad}, ring.Config{}); !errors.Is(err, ErrInvalidMeta) {
		t.Errorf("invalid member: %v", err)
	}
	if _, err := NewView([]Member{a}, ring.Config{VNodes: -1}); !errors.Is(err, ring.ErrBadConfig) {
		t.Errorf("bad ring config: %v", err)
	}
}
