package membership_test

import (
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/membership/membershiptest"
)

// TestObserverSeedRefusesMisfit: a cache node whose block size differs
// from the cluster's joins through an observer (the scheduler, which
// declares no block size) and enters nobody's member list or ring. Was:
// the observer checked the newcomer against its own metadata only (block
// size 0: accept any), so it kept the misfit in its View and Ring (and,
// the misfit's id sorting first, View.BlockSize became its 64 MiB).
// Fixed: an observer checks peers against the cluster's values
// (delegate.reference).
func TestObserverSeedRefusesMisfit(t *testing.T) {
	metas := []membership.NodeMeta{membershiptest.CacheNode("a"), membershiptest.CacheNode("b"), membershiptest.Observer("sched")}
	ms := membershiptest.Start(t, metas...)
	sched := ms[2]

	meta := membershiptest.CacheNode("0misfit")
	meta.BlockSize = 64 << 20
	misfit := membershiptest.NewAlone(t, meta)
	_, joinErr := misfit.Join([]string{sched.GossipAddr()})
	t.Logf("misfit Join through the observer: %v", joinErr)

	time.Sleep(1500 * time.Millisecond)
	for _, m := range ms {
		v := m.View()
		if _, ok := v.Member("0misfit"); ok {
			t.Errorf("%s lists the 64 MiB misfit in a 128 MiB cluster: %s", m.LocalMeta().ID, membershiptest.Describe(v))
		}
		if v.Ring != nil {
			if _, ok := v.Ring.Index("0misfit"); ok {
				t.Errorf("%s: the misfit owns ring ranges", m.LocalMeta().ID)
			}
		}
		if got := v.BlockSize(); got != membership.DefaultBlockSize {
			t.Errorf("%s: View.BlockSize() = %s, want the cluster's %s", m.LocalMeta().ID, membership.FormatBytes(got), membership.FormatBytes(membership.DefaultBlockSize))
		}
	}
}

// TestObserverDoesNotBridgeTwoClusters: an observer of a 128 MiB cluster
// (the scheduler, block size 0) that joins a seed which is a 64 MiB cache
// node of another cluster (a wrong --join) keeps only its own cluster.
// Was: both sides checked only the other's own metadata, neither refused,
// and the observer's View held the cache nodes of both clusters.
func TestObserverDoesNotBridgeTwoClusters(t *testing.T) {
	metas := []membership.NodeMeta{membershiptest.CacheNode("a"), membershiptest.CacheNode("b"), membershiptest.Observer("sched")}
	ms := membershiptest.Start(t, metas...)
	sched := ms[2]

	meta := membershiptest.CacheNode("other")
	meta.BlockSize = 64 << 20
	other := membershiptest.NewAlone(t, meta)

	_, joinErr := sched.Join([]string{other.GossipAddr()})
	t.Logf("observer joining the 64 MiB node: %v", joinErr)
	time.Sleep(2 * time.Second)
	if v := sched.View(); len(v.Members) != 3 {
		t.Errorf("the observer of the 128 MiB cluster lists %s; want only a, b and itself", membershiptest.Describe(v))
	}
	if v := sched.View(); v.Ring != nil {
		if _, ok := v.Ring.Index("other"); ok {
			t.Errorf("the observer's ring gives ranges to the 64 MiB node of another cluster")
		}
	}
}
