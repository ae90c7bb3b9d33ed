package membership_test

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/membership/membershiptest"
)

// restartTuning is LoopbackTuning with memberlist's own repairs of a
// one-sided join pushed past the test's bounds: a member that dropped a
// newcomer's alive messages learns of it again only at a push/pull (every
// PushPullInterval) or once the dead entry blocking it is reaped (after
// GossipToTheDeadTime). With LANTuning those take 15 s each; with
// LoopbackTuning half a second and 2 s, which would hide the bug.
// DeadNodeReclaimTime is between the two presets.
func restartTuning() membership.Tuning {
	tu := membership.LoopbackTuning()
	tu.DeadNodeReclaimTime = 2 * time.Second
	tu.PushPullInterval = 60 * time.Second
	tu.GossipToTheDeadTime = 60 * time.Second
	return tu
}

// TestRestartAtNewAddress: a member stops and comes back with the same id
// at a new address (a pod recreated with a new IP), before the cluster has
// forgotten its previous incarnation. Its Join must return only once the
// cluster has accepted the new address, and then every member must list it
// there. Was: after a crash, Join returned at once (the node saw the
// cluster) while the members kept dropping its alive messages, memberlist
// refusing to move a dead member's id to a new address until
// DeadNodeReclaimTime had passed; nothing told them again until the next
// push/pull, so the node stayed invisible for up to PushPullInterval
// (15 s with LANTuning); restarted before the crash was detected, Join
// failed with ErrDuplicateID, which the cache node treats as fatal.
func TestRestartAtNewAddress(t *testing.T) {
	tests := []struct {
		name string
		stop func(*membership.Membership) error
		// waitGone: restart only once the others have dropped the old
		// incarnation (left, or declared dead).
		waitGone bool
		// waits: Join has to wait for the cluster, and logs why. After a
		// Leave, memberlist moves the id at once (this case worked before
		// the fix and guards it).
		waits bool
	}{
		{"leave", func(m *membership.Membership) error { return m.Leave(ctxTimeout(t, 10*time.Second)) }, true, false},
		{"crash", (*membership.Membership).Shutdown, true, true},
		{"crash before detection", (*membership.Membership).Shutdown, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := make([]membership.Config, 3)
			for i, id := range []string{"a", "b", "c"} {
				cfgs[i] = membershiptest.Config(membershiptest.CacheNode(id))
				cfgs[i].Tuning = restartTuning()
			}
			ms := membershiptest.StartConfigs(t, cfgs...)
			old := ms[2].GossipAddr()
			if err := tc.stop(ms[2]); err != nil {
				t.Fatalf("stopping c: %v", err)
			}
			if tc.waitGone {
				for _, m := range ms[:2] {
					if _, err := m.WaitFor(ctxTimeout(t, 10*time.Second), func(v *membership.View) bool {
						_, ok := v.Member("c")
						return !ok
					}); err != nil {
						t.Fatalf("%s still lists c 10 s after it stopped: %s", m.LocalMeta().ID, membershiptest.Describe(m.View()))
					}
				}
			}

			began := time.Now()
			var logs lockedBuffer
			cfgs[2].Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			c := start(t, cfgs[2]) // port 0: a new port
			if c.GossipAddr() == old {
				t.Skipf("the kernel gave the restarted member its old port %s", old)
			}
			k, err := c.Join([]string{ms[0].GossipAddr()})
			joined := time.Since(began)
			if err != nil || k != 1 {
				t.Fatalf("Join of c restarted at %s (was %s): got (%d, %v) after %v, want (1, nil)",
					c.GossipAddr(), old, k, err, joined.Round(time.Millisecond))
			}
			// Join has returned success: the members must list c at its new
			// address within gossip's latency (tens of milliseconds; the
			// bound is loose for -race on a loaded box), not after memberlist's
			// next push/pull.
			for _, m := range ms[:2] {
				v, err := m.WaitFor(ctxTimeout(t, 2*time.Second), func(v *membership.View) bool {
					mem, ok := v.Member("c")
					return ok && mem.GossipAddr == c.GossipAddr()
				})
				if err != nil {
					mem, _ := v.Member("c")
					t.Fatalf("Join of c returned success after %v, but 2 s later %s lists c at %q, want %s (one-sided join): %s",
						joined.Round(time.Millisecond), m.LocalMeta().ID, mem.GossipAddr, c.GossipAddr(), membershiptest.Describe(v))
				}
			}
			seen := time.Since(began)
			// The wait says why (the restarted node's log; Info level).
			if tc.waits && !strings.Contains(logs.String(), "previous="+old) {
				t.Errorf("no log line explains the wait (previous=%s):\n%s", old, logs.String())
			}
			if v := c.View(); len(v.Members) != 3 {
				t.Errorf("restarted c lists %s, want a, b and c", membershiptest.Describe(v))
			}
			t.Logf("c back at %s (was %s): Join returned after %v, every member listed it after %v",
				c.GossipAddr(), old, joined.Round(time.Millisecond), seen.Round(time.Millisecond))
		})
	}
}

// TestRestartAtNewAddressLiveDuplicate: a second process claiming a live
// member's id is still refused at once with ErrDuplicateID: the live
// member answers a ping at its address, so Join does not wait for the
// failure detector as it does for a previous incarnation that went silent.
func TestRestartAtNewAddressLiveDuplicate(t *testing.T) {
	cfgs := make([]membership.Config, 2)
	for i, id := range []string{"a", "b"} {
		cfgs[i] = membershiptest.Config(membershiptest.CacheNode(id))
		cfgs[i].Tuning = restartTuning()
	}
	ms := membershiptest.StartConfigs(t, cfgs...)
	impostor := start(t, cfgs[1])
	began := time.Now()
	_, err := impostor.Join([]string{ms[0].GossipAddr()})
	took := time.Since(began)
	if !errors.Is(err, membership.ErrDuplicateID) || !strings.Contains(err.Error(), ms[1].GossipAddr()) {
		t.Fatalf("Join: got %v, want ErrDuplicateID naming %s", err, ms[1].GossipAddr())
	}
	// The failure detector would take up to about 3 s here; a ping
	// answered takes milliseconds (a few lost pings are retried).
	if took > 2*time.Second {
		t.Errorf("refusing a live duplicate took %v, want well under the failure detector's 3 s", took)
	}
	t.Logf("live duplicate refused after %v: %v", took.Round(time.Millisecond), err)
	if mem, _ := ms[0].View().Member("b"); mem.GossipAddr != ms[1].GossipAddr() {
		t.Errorf("a's view of b moved to %s", mem.GossipAddr)
	}
}

// TestRestartAtNewAddressBound: the wait is bounded by the restarted
// node's own tuning. Here b keeps node c's dead incarnation for 10 s
// (DeadNodeReclaimTime 10 s, unlike the others' 2 s), longer than c's Join
// waits (about 6 s with restartTuning): Join fails with ErrJoin naming b
// and saying why, rather than returning while b does not list c. A later
// Join resumes the wait, although its seed already lists c, and succeeds
// once b lets c in.
func TestRestartAtNewAddressBound(t *testing.T) {
	cfgs := make([]membership.Config, 3)
	for i, id := range []string{"a", "b", "c"} {
		cfgs[i] = membershiptest.Config(membershiptest.CacheNode(id))
		cfgs[i].Tuning = restartTuning()
	}
	cfgs[1].Tuning.DeadNodeReclaimTime = 10 * time.Second
	ms := membershiptest.StartConfigs(t, cfgs...)
	old := ms[2].GossipAddr()
	_ = ms[2].Shutdown()
	for _, m := range ms[:2] {
		if _, err := m.WaitFor(ctxTimeout(t, 10*time.Second), func(v *membership.View) bool {
			_, ok := v.Member("c")
			return !ok
		}); err != nil {
			t.Fatalf("%s still lists c 10 s after it stopped: %s", m.LocalMeta().ID, membershiptest.Describe(m.View()))
		}
	}
	dead := time.Now()
	var logs lockedBuffer
	cfgs[2].Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := start(t, cfgs[2])
	_, err := c.Join([]string{ms[0].GossipAddr()})
	first := time.Since(dead)
	if !errors.Is(err, membership.ErrJoin) || !strings.Contains(err.Error(), ms[1].GossipAddr()) || !strings.Contains(err.Error(), "DeadNodeReclaimTime") {
		t.Fatalf("first Join: got %v after %v, want ErrJoin naming b (%s) and DeadNodeReclaimTime", err, first.Round(time.Millisecond), ms[1].GossipAddr())
	}
	if first > 10*time.Second {
		t.Errorf("first Join returned %v after c was declared dead, want before b's 10 s", first.Round(time.Millisecond))
	}
	if !strings.Contains(logs.String(), "previous="+old) {
		t.Errorf("no log line explains the wait (previous=%s):\n%s", old, logs.String())
	}
	t.Logf("first Join, %v after c was declared dead: %v", first.Round(time.Millisecond), err)
	if mem, _ := ms[0].View().Member("c"); mem.GossipAddr != c.GossipAddr() {
		t.Fatalf("a lists c at %q, want %s: the seed should have let c in after its 2 s", mem.GossipAddr, c.GossipAddr())
	}

	if _, err := c.Join([]string{ms[0].GossipAddr()}); err != nil {
		t.Fatalf("second Join, %v after c was declared dead: %v", time.Since(dead).Round(time.Millisecond), err)
	}
	t.Logf("second Join returned %v after c was declared dead", time.Since(dead).Round(time.Millisecond))
	if _, err := ms[1].WaitFor(ctxTimeout(t, 2*time.Second), func(v *membership.View) bool {
		mem, ok := v.Member("c")
		return ok && mem.GossipAddr == c.GossipAddr()
	}); err != nil {
		t.Fatalf("Join returned success but b does not list c at %s: %s", c.GossipAddr(), membershiptest.Describe(ms[1].View()))
	}
}

// TestRestartAtNewAddressUnreachableMember: a member that stays alive in
// the gossip but that the restarted node cannot reach (here u, whose
// advertised address nobody listens on: the others' probes fail, and it
// refutes the suspicion at its own push/pulls, every 500 ms with
// LoopbackTuning) cannot confirm the new
// address, and must not make the restart fail. Join waits for the members
// it can reach; once they all list the node and the bound has passed, it
// returns success. Was: Join failed with ErrJoin saying that u "still
// refuses" the new address (it was never reached), every Join after it
// too, so the cache node, which retries ErrJoin for --join-timeout, exited
// after 30 s and could not come back while u was in the cluster.
func TestRestartAtNewAddressUnreachableMember(t *testing.T) {
	cfgs := make([]membership.Config, 3)
	for i, id := range []string{"a", "b", "c"} {
		cfgs[i] = membershiptest.Config(membershiptest.CacheNode(id))
		cfgs[i].Tuning = membership.LoopbackTuning()
	}
	ucfg := membershiptest.Config(membershiptest.CacheNode("u"))
	// Bound on 127.0.0.58, announced on 127.0.0.59 (the same port, which
	// memberlist advertises for a port-0 bind): nothing answers there.
	ucfg.BindAddr, ucfg.AdvertiseAddr = "127.0.0.58:0", "127.0.0.59:0"
	ms := membershiptest.StartConfigs(t, append(cfgs, ucfg)...)
	u := ms[3].GossipAddr()
	old := ms[2].GossipAddr()
	_ = ms[2].Shutdown()
	for _, m := range ms[:2] {
		if _, err := m.WaitFor(ctxTimeout(t, 10*time.Second), func(v *membership.View) bool {
			_, ok := v.Member("c")
			return !ok
		}); err != nil {
			t.Fatalf("%s still lists c 10 s after it stopped: %s", m.LocalMeta().ID, membershiptest.Describe(m.View()))
		}
	}
	if _, ok := ms[0].View().Member("u"); !ok {
		t.Fatalf("u (advertised at %s) is no longer a member; the test needs it alive: %s", u, membershiptest.Describe(ms[0].View()))
	}

	c := start(t, cfgs[2])
	began := time.Now()
	k, err := c.Join([]string{ms[0].GossipAddr()})
	took := time.Since(began)
	if err != nil || k != 1 {
		t.Fatalf("Join of c restarted at %s (was %s), with u unreachable at %s: got (%d, %v) after %v, want (1, nil)",
			c.GossipAddr(), old, u, k, err, took.Round(time.Millisecond))
	}
	for _, m := range ms[:2] {
		if _, err := m.WaitFor(ctxTimeout(t, 2*time.Second), func(v *membership.View) bool {
			mem, ok := v.Member("c")
			return ok && mem.GossipAddr == c.GossipAddr()
		}); err != nil {
			t.Fatalf("Join returned success but %s does not list c at %s: %s", m.LocalMeta().ID, c.GossipAddr(), membershiptest.Describe(m.View()))
		}
	}
	t.Logf("c back at %s (was %s) with u unreachable at %s: Join returned after %v", c.GossipAddr(), old, u, took.Round(time.Millisecond))
}

// TestRestartAtNewAddressThroughAnotherAddressOfTheSeed: as
// TestRestartAtNewAddress after a crash, with the seed dialed at an
// address its member list does not name (bound to 0.0.0.0, advertising
// 127.0.0.1, joined at 127.0.0.3). Join must still see that the seed
// remembers this id elsewhere, and return only once the seed lists the
// node at its new address. Was: Join returned at once and the seed kept
// dropping the node's alive messages (one-sided join until the next
// push/pull: 28.6 s measured with LANTuning).
func TestRestartAtNewAddressThroughAnotherAddressOfTheSeed(t *testing.T) {
	acfg := membershiptest.Config(membershiptest.CacheNode("a"))
	acfg.Tuning = restartTuning()
	acfg.BindAddr, acfg.AdvertiseAddr = "0.0.0.0:0", "127.0.0.1:0"
	a := start(t, acfg)
	_, port, _ := net.SplitHostPort(a.GossipAddr())
	dial := []string{net.JoinHostPort("127.0.0.3", port)}

	ccfg := membershiptest.Config(membershiptest.CacheNode("c"))
	ccfg.Tuning = restartTuning()
	c := start(t, ccfg)
	if _, err := c.Join(dial); err != nil {
		t.Fatalf("c: Join %v: %v", dial, err)
	}
	membershiptest.WaitConverged(t, []*membership.Membership{a, c}, 5*time.Second)
	old := c.GossipAddr()
	_ = c.Shutdown()
	if _, err := a.WaitFor(ctxTimeout(t, 10*time.Second), func(v *membership.View) bool {
		_, ok := v.Member("c")
		return !ok
	}); err != nil {
		t.Fatalf("a still lists c 10 s after it stopped: %s", membershiptest.Describe(a.View()))
	}

	c = start(t, ccfg) // port 0: a new port
	if c.GossipAddr() == old {
		t.Skipf("the kernel gave the restarted member its old port %s", old)
	}
	began := time.Now()
	if _, err := c.Join(dial); err != nil {
		t.Fatalf("Join of c restarted at %s (was %s) through %v: %v", c.GossipAddr(), old, dial, err)
	}
	joined := time.Since(began)
	if _, err := a.WaitFor(ctxTimeout(t, 2*time.Second), func(v *membership.View) bool {
		mem, ok := v.Member("c")
		return ok && mem.GossipAddr == c.GossipAddr()
	}); err != nil {
		mem, _ := a.View().Member("c")
		t.Fatalf("Join of c returned success after %v, but 2 s later a lists c at %q, want %s (one-sided join)",
			joined.Round(time.Millisecond), mem.GossipAddr, c.GossipAddr())
	}
	t.Logf("c back at %s (was %s) through %v: Join returned after %v", c.GossipAddr(), old, dial, joined.Round(time.Millisecond))
}
