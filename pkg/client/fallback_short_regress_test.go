package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
)

// endsEarlyStore is a store whose reads of the object stop with io.EOF at
// byte cut, while its Stat (and the node's) say the object is longer: a
// store that lost the object's tail, or one that serves a shorter object
// under the same version.
type endsEarlyStore struct {
	origin.Store
	cut int64
}

func (s endsEarlyStore) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	if off >= s.cut {
		return 0, io.EOF
	}
	if int64(len(p)) > s.cut-off {
		n, err := s.Store.ReadAt(ctx, uri, version, p[:s.cut-off], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return n, err
		}
		return n, io.EOF
	}
	return s.Store.ReadAt(ctx, uri, version, p, off)
}

// TestFallbackShortOriginRead: during a fallback the origin ends the
// object before the size the read was pinned to (the node's Stat, or the
// origin's own). The call must fail (a correct prefix written), not
// return success with a truncated range the caller cannot tell from a
// whole one. Was: fallback took io.EOF for the end of the range and
// returned nil with 6,000 of the 10,000 bytes (found by a review).
func TestFallbackShortOriginRead(t *testing.T) {
	e := newEnv(t)
	store := endsEarlyStore{Store: e.store, cut: 6000}
	c := newClient(t, Config{Origin: store, FallbackChunkSize: 1000})
	check := func(name string, sum readpath.Summary, err error, buf *bytes.Buffer) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: success with %d of 10000 bytes (summary %+v): a truncated read", name, buf.Len(), sum)
		} else if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: error %v, want one wrapping io.ErrUnexpectedEOF", name, err)
		}
		if !bytes.Equal(buf.Bytes(), e.data[:buf.Len()]) {
			t.Errorf("%s: the bytes written are not a prefix of the range", name)
		}
	}
	// The node fails mid-stream: the rest comes from the origin, pinned to
	// the size the node's Stat gave.
	e.node.set(func(n *testNode) { n.failAfter = 3000; n.failCode = codes.Unavailable })
	var buf bytes.Buffer
	sum, err := c.ReadRange(context.Background(), e.node.addr, testURI, 0, 10_000, &buf)
	check("node fails mid-stream", sum, err, &buf)
	// The node is down: the Stat and the whole read come from the origin.
	buf.Reset()
	sum, err = c.ReadRange(context.Background(), deadAddr(t), testURI, 0, 10_000, &buf)
	check("node down", sum, err, &buf)
	// Pinned by the caller, node down: the size comes from the origin's Stat.
	buf.Reset()
	sum, err = c.Read(context.Background(), deadAddr(t), readpath.Request{URI: testURI, Length: 10_000, ExpectedVersion: e.info.Version}, &buf)
	check("pinned by the caller, node down", sum, err, &buf)
}
