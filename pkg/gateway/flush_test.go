package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
)

// pausingBackend emits the first head bytes of a read, then waits for
// resume before it emits the rest, as the node does between two read
// windows when the next one comes from the origin.
type pausingBackend struct {
	*fakeBackend
	head   int
	resume chan struct{}
}

func (b *pausingBackend) Read(ctx context.Context, req readpath.Request, emit func([]byte) error) (readpath.Summary, error) {
	var buf bytes.Buffer
	sum, err := b.fakeBackend.Read(ctx, req, func(p []byte) error { buf.Write(p); return nil })
	if err != nil {
		return sum, err
	}
	if err := emit(buf.Bytes()[:b.head]); err != nil {
		return sum, err
	}
	select {
	case <-b.resume:
	case <-ctx.Done():
		return sum, ctx.Err()
	}
	return sum, emit(buf.Bytes()[b.head:])
}

// Was: the bytes a backend emitted last before it paused (the tail of a
// read window, up to the HTTP server's 4 KiB write buffer) waited in the
// buffer until the backend emitted again, so a client reading a long
// object stalled on bytes the node already had for as long as the next
// window took to fetch. Fixed: the gateway flushes after every piece.
func TestEmittedBytesReachTheClientBeforeTheNextPiece(t *testing.T) {
	mem := origintest.NewMemStore()
	data := testData(64<<10, 7)
	mem.Put("s3://b/k", data)
	b := &pausingBackend{fakeBackend: &fakeBackend{StoreBackend: StoreBackend{Store: mem}}, head: 100, resume: make(chan struct{})}
	g, err := New(Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	type head struct {
		res *http.Response
		b   []byte
		err error
	}
	got := make(chan head, 1)
	go func() {
		res, err := http.Get(srv.URL + "/b/k")
		if err != nil {
			got <- head{err: err}
			return
		}
		h := make([]byte, b.head)
		n, err := io.ReadFull(res.Body, h)
		got <- head{res, h[:n], err}
	}()
	var res *http.Response
	select {
	case h := <-got:
		if h.err != nil {
			t.Fatal(h.err)
		}
		res = h.res
		defer res.Body.Close()
		if !bytes.Equal(h.b, data[:b.head]) {
			t.Fatalf("first %d bytes differ", b.head)
		}
	case <-time.After(10 * time.Second):
		close(b.resume)
		t.Fatalf("the headers and first %d bytes the backend emitted did not reach the client in 10 s while the backend waited: they sat in the server's write buffer", b.head)
	}
	close(b.resume)
	rest, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(rest, data[b.head:]) {
		t.Fatalf("rest of the body: %d bytes, err %v; want %d bytes", len(rest), err, len(data)-b.head)
	}
}
