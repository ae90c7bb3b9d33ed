package client

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// closingWriter closes the client on its first Write: a Close while a read
// is in flight.
type closingWriter struct {
	c    *Client
	buf  bytes.Buffer
	done bool
}

func (w *closingWriter) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		w.c.Close()
	}
	return w.buf.Write(p)
}

// TestCloseDuringReadFails: Close documents "Calls in flight
// fail"; was, with an Origin configured an in-flight read whose connection
// Close tore down is taken for a node failure and completed from the
// origin (counted as a node failure and an owner_unavailable miss).
func TestCloseDuringReadFails(t *testing.T) {
	e := newEnv(t)
	const size = 40 << 20 // more than the 16 MiB window: not all buffered
	e.data = bytes.Repeat(testData(1<<20, 9), size>>20)
	e.info = e.store.Put(testURI, e.data)
	e.node.set(func(n *testNode) { n.chunk = 1 << 20 })
	c := newClient(t, Config{Origin: e.store})
	w := &closingWriter{c: c}
	sum, err := c.ReadRange(context.Background(), e.node.addr, testURI, 0, size, w)
	t.Logf("err=%v stats=%+v origin bytes=%d", err, c.Stats(), sum.OriginBytes)
	if err == nil || !errors.Is(err, ErrClosed) {
		t.Fatalf("a read in flight at Close: err %v, want it to fail wrapping ErrClosed (stats %+v)", err, c.Stats())
	}
}
