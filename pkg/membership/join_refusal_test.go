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
