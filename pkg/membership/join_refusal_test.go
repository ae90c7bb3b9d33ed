package membership_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/membership/membershiptest"
)

// TestJoinDoesNotReturnAnotherNodesRefusal: a healthy node A is joining a
// seed that does not answer (a pod not yet up). Meanwhile a misfit M (other
// block size) joins A and A, correctly, refuses M. A's own Join must then
// fail with ErrJoin (seed unreachable), not with M's IncompatibleError: the
// cache node treats ErrIncompatible from Join as fatal and exits, telling
// the operator to restart A with M's block size.
func TestJoinDoesNotReturnAnotherNodesRefusal(t *testing.T) {
	// A seed that accepts TCP connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()

	cfgA := membershiptest.Config(membershiptest.CacheNode("a"))
	cfgA.Tuning.TCPTimeout = 2 * time.Second
	a, err := membership.New(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })

	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := a.Join([]string{ln.Addr().String()})
		done <- res{n, err}
	}()
	time.Sleep(200 * time.Millisecond) // A's Join is in flight

	misfit := membershiptest.CacheNode("m")
	misfit.BlockSize = 64 << 20
	m := membershiptest.NewAlone(t, misfit)
	if _, err := m.Join([]string{a.GossipAddr()}); !errors.Is(err, membership.ErrIncompatible) {
		t.Fatalf("misfit join: got %v, want ErrIncompatible", err)
	}

	r := <-done
	if errors.Is(r.err, membership.ErrIncompatible) || errors.Is(r.err, membership.ErrDuplicateID) {
		t.Fatalf("A's Join to an unresponsive seed returned the refusal of another node: %v", r.err)
	}
	if !errors.Is(r.err, membership.ErrJoin) {
		t.Fatalf("A's Join: got (%d, %v), want ErrJoin", r.n, r.err)
	}
}

// TestJoinThroughAnotherAddressOfTheSeed: the seed is dialed at an address
// other than the one it advertises (bound to 0.0.0.0 and joined through
// 127.0.0.1; a NAT, or a Service address in front of it), so its member
// list does not name the address dialed. Its refusal is still this node's:
// a misfit's Join fails at once with the *IncompatibleError that tells it
// which block size to use, and a second live process with a member's id
// gets ErrDuplicateID. Was: both got ErrJoin, which the cache node retries
// for --join-timeout (30 s), with the cluster-side wording ("refusing
// member "seed": its block size 128 MiB differs from this cluster's 64
// MiB", the misfit's own block size named as the cluster's).
func TestJoinThroughAnotherAddressOfTheSeed(t *testing.T) {
	cfg := membershiptest.Config(membershiptest.CacheNode("seed"))
	cfg.BindAddr, cfg.AdvertiseAddr = "0.0.0.0:0", "127.0.0.1:0"
	seed, err := membership.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = seed.Shutdown() })
	_, port, _ := net.SplitHostPort(seed.GossipAddr())
	dial := net.JoinHostPort("127.0.0.2", port) // reaches the seed, which advertises 127.0.0.1

	misfit := membershiptest.CacheNode("misfit")
	misfit.BlockSize = 64 << 20
	mcfg := membershiptest.Config(misfit)
	mcfg.BindAddr = "127.0.0.2:0"
	m, err := membership.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	_, err = m.Join([]string{dial})
	var ie *membership.IncompatibleError
	if !errors.As(err, &ie) || !ie.Joining || ie.Local != 64<<20 || ie.Remote != 128<<20 {
		t.Fatalf("misfit joining the seed at %s (it advertises %s): got %v, want this node's *IncompatibleError (64 MiB here, 128 MiB there)",
			dial, seed.GossipAddr(), err)
	}

	dcfg := membershiptest.Config(membershiptest.CacheNode("seed"))
	dcfg.BindAddr = "127.0.0.2:0"
	dup, err := membership.New(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dup.Shutdown() })
	if _, err := dup.Join([]string{dial}); !errors.Is(err, membership.ErrDuplicateID) {
		t.Fatalf("a second process with the seed's id joining at %s: got %v, want ErrDuplicateID", dial, err)
	}
}
