package client

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// slowWriter blocks on its first Write for longer than the client's
// IdleTimeout (a caller piping the bytes to a slow consumer).
type slowWriter struct {
	buf   bytes.Buffer
	delay time.Duration
	slept bool
}

func (w *slowWriter) Write(p []byte) (int, error) {
	if !w.slept {
		w.slept = true
		time.Sleep(w.delay)
	}
	return w.buf.Write(p)
}

// TestIdleTimerStopsDuringCallerWrite: time the client spends blocked in
// the caller's Write is not the node's silence. Was: the idle timer kept
// running, so a healthy node held back only by the caller's writer was
// declared stalled: without an Origin the read failed with
// ErrNodeUnavailable; with one, it fell back and the node's local hits
// were reported as owner_unavailable misses.
func TestIdleTimerStopsDuringCallerWrite(t *testing.T) {
	for _, withOrigin := range []bool{false, true} {
		// A range larger than the client's 16 MiB flow-control window, as
		// a 128 MiB split is: the node cannot send it all ahead.
		e := newEnv(t)
		const size = 40 << 20
		e.data = bytes.Repeat(testData(1<<20, 7), size>>20)
		e.info = e.store.Put(testURI, e.data)
		e.node.set(func(n *testNode) { n.chunk = 1 << 20 })
		cfg := Config{IdleTimeout: time.Second}
		if withOrigin {
			cfg.Origin = e.store
		}
		c := newClient(t, cfg)
		w := &slowWriter{delay: 3 * time.Second}
		sum, err := c.ReadRange(context.Background(), e.node.addr, testURI, 0, size, w)
		if err != nil {
			t.Errorf("origin=%v: a healthy node, a slow writer: %v", withOrigin, err)
			continue
		}
		if !bytes.Equal(w.buf.Bytes(), e.data) {
			t.Fatalf("origin=%v: wrong bytes", withOrigin)
		}
		t.Logf("origin=%v: stats %+v", withOrigin, c.Stats())
		if st := c.Stats(); st.NodeFailures != 0 || st.Fallbacks != 0 || sum.LocalHitBytes != size {
			t.Errorf("origin=%v: stats %+v, summary %+v: the node did not fail, the caller's writer was slow", withOrigin, st, sum)
		}
	}
}
