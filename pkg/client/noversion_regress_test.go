package client_test

// Regression test: a CacheService read of an object its origin stores
// without an ETag (origin.ErrNoVersion) was answered INTERNAL, the code of
// an unknown failure, where the S3 gateway answers 501 naming the missing
// ETag; the client took it for a node failure and asked the origin again.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// noETagStore is a MemStore whose Stat fails as S3Store's does for an
// object answered without an ETag.
type noETagStore struct{ *origintest.MemStore }

func (s noETagStore) Stat(ctx context.Context, uri string) (origin.Info, error) {
	if _, err := s.MemStore.Stat(ctx, uri); err != nil {
		return origin.Info{}, err
	}
	return origin.Info{}, fmt.Errorf("%w: HEAD %s", origin.ErrNoVersion, uri)
}

// TestNoVersionIsUnimplemented: a real node answers a Stat and a ReadRange
// of an object without an ETag UNIMPLEMENTED with a message naming the
// ETag; the client hands it back as origin.ErrNoVersion, without counting
// a node failure or falling back to the origin (which says the same).
func TestNoVersionIsUnimplemented(t *testing.T) {
	mem := origintest.NewMemStore()
	const uri = "s3://bkt/no-etag.bin"
	mem.Put(uri, make([]byte, 4096))
	store := noETagStore{mem}
	cl := nodetest.Start(t, nodetest.Options{N: 1, Origin: store})
	addr := cl.Nodes[0].GRPCAddr()
	ctx := context.Background()

	check := func(what string, err error) {
		t.Helper()
		if s, _ := status.FromError(err); err == nil || s.Code() != codes.Unimplemented || !strings.Contains(s.Message(), "ETag") {
			t.Errorf("%s: got %v (code %v), want UNIMPLEMENTED naming the missing ETag", what, err, status.Code(err))
		}
	}
	_, err := cl.Client(t, 0).Stat(ctx, &cachev1.StatRequest{Uri: uri})
	check("gRPC Stat", err)
	stream, err := cl.Client(t, 0).ReadRange(ctx, &cachev1.ReadRangeRequest{Uri: uri, Offset: 0, Length: 100})
	if err == nil {
		_, err = stream.Recv()
	}
	check("gRPC ReadRange", err)

	c, err := client.New(client.Config{Origin: store})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Stat(ctx, addr, uri)
	check("client Stat", err)
	if !errors.Is(err, origin.ErrNoVersion) {
		t.Errorf("client Stat: %v does not match origin.ErrNoVersion", err)
	}
	_, err = c.Read(ctx, addr, readpath.Request{URI: uri, Offset: 0, Length: 100}, io.Discard)
	check("client Read", err)
	if !errors.Is(err, origin.ErrNoVersion) {
		t.Errorf("client Read: %v does not match origin.ErrNoVersion", err)
	}
	if st := c.Stats(); st.NodeFailures != 0 || st.Fallbacks != 0 {
		t.Errorf("client stats %+v: want no node failure and no fallback (the object is the problem, not the node)", st)
	}
}
