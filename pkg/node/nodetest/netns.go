package nodetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/locuscache/locus/pkg/node"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// Netns is a Linux network namespace made by NewNetns for one test. A
// process runs in it through StartProcess (ProcessOptions.Netns), and the
// test reaches its listeners through DialContext, HTTPClient and Dial,
// which open their sockets inside the namespace: the test binary itself
// stays in the root namespace.
type Netns struct {
	// Name is the namespace's name for `ip netns` (/run/netns/<Name>).
	Name string
	f    *os.File
}

// NetnsAvailable reports why network namespaces cannot be used here (not
// root, no `ip`, or `ip netns add` fails), or nil when they can.
func NetnsAvailable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("network namespaces need root (euid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("no ip command (iproute2): %w", err)
	}
	name := fmt.Sprintf("locus-probe-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NewNetns creates the namespace name with its loopback up, and deletes it
// when the test ends (after the processes started later are killed: the
// cleanups run last-in first-out).
func NewNetns(t testing.TB, name string) *Netns {
	t.Helper()
	IP(t, "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	n := &Netns{Name: name, f: f}
	n.IP(t, "link", "set", "lo", "up")
	return n
}

// IP runs `ip args...` in the root namespace, failing the test on error.
func IP(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// IP runs `ip args...` inside the namespace, failing the test on error.
func (n *Netns) IP(t testing.TB, args ...string) {
	t.Helper()
	IP(t, append([]string{"-n", n.Name}, args...)...)
}

// DialContext dials addr from inside the namespace: the socket is made
// on an OS thread moved into the namespace (setns), which is thrown away
// afterwards (its goroutine exits still locked to it).
func (n *Netns) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns %s: %w", n.Name, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// HTTPClient returns a client whose connections are made in the namespace.
func (n *Netns) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: n.DialContext, DisableKeepAlives: true}}
}

// Dial returns a CacheService client for addr inside the namespace
// (plaintext), closed when the test ends.
func (n *Netns) Dial(t testing.TB, addr string) cachev1.CacheServiceClient {
	t.Helper()
	opts := append(node.PeerDialOptions(nil), grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
		return n.DialContext(ctx, "tcp", a)
	}))
	cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cachev1.NewCacheServiceClient(cc)
}
