// Package schedulertest holds harnesses for tests of the scheduler and of
// its clients: a fake membership whose View the test sets (Views), an etcd
// for the HA tests (StartEtcd: Debian's etcd binary when installed, else
// an embedded etcd server), an in-process scheduler on loopback (Start),
// and cache-node members as child processes (MemberMain, StartMember) for
// multi-process tests.
package schedulertest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/ring"
)

// Views is a scheduler.Membership whose View the test sets: no gossip, no
// sockets. The zero value is not usable; call NewViews.
type Views struct {
	mu      sync.Mutex
	v       *membership.View
	changed chan struct{} // closed when v is replaced
	left    bool
}

// NewViews returns a Views showing the given members (see Set).
func NewViews(t testing.TB, members ...membership.Member) *Views {
	t.Helper()
	vs := &Views{changed: make(chan struct{})}
	if err := vs.Set(members...); err != nil {
		t.Fatal(err)
	}
	return vs
}

// MustViews is NewViews for code without a testing.TB (examples); it
// panics on invalid members.
func MustViews(members ...membership.Member) *Views {
	vs := &Views{changed: make(chan struct{})}
	if err := vs.Set(members...); err != nil {
		panic(err)
	}
	return vs
}

// Set publishes a View of members (membership.NewView: defaults filled,
// validated, default ring config).
func (vs *Views) Set(members ...membership.Member) error {
	v, err := membership.NewView(members, ring.Config{})
	if err != nil {
		return fmt.Errorf("schedulertest: %w", err)
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.v = v
	close(vs.changed)
	vs.changed = make(chan struct{})
	return nil
}

// View returns the current View.
func (vs *Views) View() *membership.View {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.v
}

// WaitFor blocks until cond holds for the current View.
func (vs *Views) WaitFor(ctx context.Context, cond func(*membership.View) bool) (*membership.View, error) {
	for {
		vs.mu.Lock()
		v, ch := vs.v, vs.changed
		vs.mu.Unlock()
		if cond(v) {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}

// Leave records that the scheduler left.
func (vs *Views) Leave(context.Context) error {
	vs.mu.Lock()
	vs.left = true
	vs.mu.Unlock()
	return nil
}

// Node returns a cache-node member: id, rack, slots, placeholder
// addresses derived from the id, the default block size and replication
// (membership.DefaultReplication, 2: tasks are DATA_LOCAL on a block's
// first two owners; see Replication for owner-only lists).
func Node(id, rack string, slots int) membership.Member {
	return membership.Member{NodeMeta: membership.NodeMeta{
		ID: id, Rack: rack, Slots: slots, CapacityBytes: 1 << 30,
		GRPCAddr: id + ".test:7070", HTTPAddr: id + ".test:7080",
	}}
}

// Replication returns m announcing replication r (the length of every
// block's preference list, which the scheduler takes from the nodes): 1
// for tests of owner-only lists, where a task is DATA_LOCAL only on its
// block's owner. Every cache member of a View should announce the same.
func Replication(m membership.Member, r int) membership.Member {
	m.Replication = r
	return m
}

// OwnerOnly returns the members announcing replication 1.
func OwnerOnly(ms ...membership.Member) []membership.Member {
	out := make([]membership.Member, len(ms))
	for i, m := range ms {
		out[i] = Replication(m, 1)
	}
	return out
}

// Draining returns m in state draining.
func Draining(m membership.Member) membership.Member {
	m.State = membership.StateDraining
	return m
}
