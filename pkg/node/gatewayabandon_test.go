package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// gatedOrigin counts the origin reads a node makes and holds those at or
// past from until their context ends or release is closed, reporting on
// held when one starts waiting and counting in cancelled those whose
// context ended first.
type gatedOrigin struct {
	origin.Store
	from      int64
	held      chan int64
	release   chan struct{}
	calls     atomic.Int64
	bytes     atomic.Int64
	cancelled atomic.Int64
	mu        sync.Mutex
	gate      bool // hold reads at or past from; guarded by mu
}

func (o *gatedOrigin) setGate(on bool) {
	o.mu.Lock()
	o.gate = on
	o.mu.Unlock()
}

func (o *gatedOrigin) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	o.calls.Add(1)
	o.mu.Lock()
	gate := o.gate
	o.mu.Unlock()
	if gate && off >= o.from {
		select {
		case o.held <- off:
		default:
		}
		select {
		case <-ctx.Done():
			o.cancelled.Add(1)
			return 0, ctx.Err()
		case <-o.release:
		}
	}
	n, err := o.Store.ReadAt(ctx, uri, version, p, off)
	o.bytes.Add(int64(n))
	return n, err
}

// TestGatewayAbandonedGetStopsFilling: a client that closes its connection
// mid-body (a real HTTP client over loopback, a real S3 origin) ends the
// node's read: the request's context is cancelled when the server sees the
// connection close, the origin reads of the next read window in flight
// return with that cancellation, no window after it is fetched, and none
// of the abandoned fetch's pages is cached (a later GET reads them from the
// origin and gets the right bytes).
func TestGatewayAbandonedGetStopsFilling(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	const window = cache.DefaultFetchParallelism * cache.DefaultMaxFetchBytes // what one read fetches before it delivers
	data := randBytes(77, 3*window)
	gw.Put(t, "big.bin", data)
	o := &gatedOrigin{Store: gw.Store(t), from: window, held: make(chan int64, 1), release: make(chan struct{})}
	defer close(o.release) // never leave a held read behind, even on failure
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, store: o, mutate: rvmGateway})
	n := c.nodes[0]
	o.setGate(true)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get("http://" + n.httpAddr + "/" + gw.Bucket + "/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	// Take the first window but its last bytes (they may sit in the
	// server's write buffer while the node fetches the next window), so
	// the node goes on to the second.
	got := make([]byte, window-64<<10)
	if _, err := io.ReadFull(resp.Body, got); err != nil || !bytes.Equal(got, data[:len(got)]) {
		t.Fatalf("first window: %v, bytes equal %v", err, bytes.Equal(got, data[:len(got)]))
	}
	select {
	case <-o.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the node never started fetching the second window")
	}
	callsAtClose, bytesAtClose := o.calls.Load(), o.bytes.Load()
	resp.Body.Close() // mid-body: the transport closes the connection

	deadline := time.Now().Add(30 * time.Second)
	for o.cancelled.Load() == 0 || n.Inflight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("30s after the client left: %d origin reads cancelled, %d node reads in flight; the read did not stop",
				o.cancelled.Load(), n.Inflight())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if b := o.bytes.Load(); b != bytesAtClose || b != window {
		t.Errorf("origin sent %d bytes (%d when the client left), want %d: the first window only", b, bytesAtClose, window)
	}
	maxCalls := callsAtClose + cache.DefaultFetchParallelism // the second window's fetches, held
	if calls := o.calls.Load(); calls > maxCalls {
		t.Errorf("%d origin reads, want at most %d: reads went on after the client left", calls, maxCalls)
	}
	t.Logf("origin: %d reads, %d bytes for a %d-byte object; %d reads cancelled when the client left",
		o.calls.Load(), o.bytes.Load(), len(data), o.cancelled.Load())

	// Nothing of the abandoned fetch was cached: the second window comes
	// from the origin again, whole and right.
	o.setGate(false)
	before := o.bytes.Load()
	req, _ := http.NewRequest("GET", "http://"+n.httpAddr+"/"+gw.Bucket+"/big.bin", nil)
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", window, 2*window-1))
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[window:2*window]) {
		t.Fatalf("GET of the second window: %d, %v, bytes equal %v", resp.StatusCode, err, bytes.Equal(body, data[window:2*window]))
	}
	if fetched := o.bytes.Load() - before; fetched != window {
		t.Errorf("the second window took %d origin bytes, want %d: pages of the abandoned fetch were cached", fetched, window)
	}
}
