package node

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// otherVersionPeer serves other's bytes at the right offsets and length
// and a summary naming version "other": a peer that ignored
// ExpectedVersion (an older or broken node).
func otherVersionPeer(other []byte) *fakePeer {
	return &fakePeer{readRange: func(req *cachev1.ReadRangeRequest, s grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
		end := min(int64(len(other)), req.Offset+req.Length)
		for off := req.Offset; off < end; off += tPage {
			if err := s.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Chunk{Chunk: &cachev1.Chunk{
				Offset: off, Data: other[off:min(end, off+tPage)]}}}); err != nil {
				return err
			}
		}
		sum := readpath.Summary{Bytes: end - req.Offset, LocalHitBytes: end - req.Offset, Version: "other", ObjectSize: int64(len(other))}
		return s.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Summary{Summary: sum.ToProto()}})
	}}
}

// TestPeerServesAnotherVersion: a peer's summary that names another
// version than the one asked for is known only after its bytes arrived. A
// read that passed them on fails (DATA_LOSS, ErrPeerVersion) rather than
// succeed with them; a replica's fill drops them and reads the block from
// the origin, so it never caches them.
func TestPeerServesAnotherVersion(t *testing.T) {
	const size = 12 * tBlock
	data, other := randBytes(61, size), randBytes(62, size)
	uri := "s3://bkt/other-version"

	t.Run("read through the peer", func(t *testing.T) {
		c, off := otherVersionSetup(t, uri, data, other)
		got, _, err := read(t, c.nodes[0], readpath.Request{URI: uri, Offset: off, Length: tBlock})
		if err == nil {
			t.Fatalf("read succeeded (bytes are the origin's: %v); want ErrPeerVersion", bytes.Equal(got, data[off:off+tBlock]))
		}
		if !errors.Is(err, ErrPeerVersion) || Code(err) != codes.DataLoss {
			t.Fatalf("read: %v (code %v), want ErrPeerVersion, DATA_LOSS", err, Code(err))
		}
	})

	t.Run("replica fill", func(t *testing.T) {
		c := newTCluster(t, tclusterOpts{n: 1, repl: 2})
		c.addMember("zz-peer", startFakePeer(t, otherVersionPeer(other)))
		c.mem.Put(uri, data)
		off := blockListed(t, c, uri, size/tBlock, "zz-peer", "n0") * tBlock // n0 fills from the peer
		for i := range 2 {
			got, s, err := read(t, c.nodes[0], readpath.Request{URI: uri, Offset: off, Length: tBlock})
			if err != nil || !bytes.Equal(got, data[off:off+tBlock]) {
				t.Fatalf("read %d of the replica's block: %v, bytes of the asked version: %v", i+1, err, bytes.Equal(got, data[off:off+tBlock]))
			}
			if i == 1 && s.LocalHitBytes != tBlock {
				t.Fatalf("second read: %d local hit bytes, want the block (%d) cached from the origin", s.LocalHitBytes, tBlock)
			}
		}
	})
}

// TestPeerVersionClientDoesNotFallBack: a client with an origin fallback
// does not continue from the origin after a node's ErrPeerVersion
// (DATA_LOSS): the other version's bytes already went out, and continuing
// would end the read with success and a mix of two versions.
func TestPeerVersionClientDoesNotFallBack(t *testing.T) {
	const size = 12 * tBlock
	data, other := randBytes(61, size), randBytes(62, size)
	uri := "s3://bkt/other-version-client"
	c, off := otherVersionSetup(t, uri, data, other)
	cl, err := client.New(client.Config{Origin: c.mem})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var buf bytes.Buffer
	// The peer's block, which it serves with the other version's bytes.
	length := min(int64(2*tBlock), size-off) // the peer's block and the next, when there is one
	// The version asked for is the origin's (a caller that planned its
	// splits from a Stat, as engines do; a Stat through the node first
	// would sniff the footer through the peer and mark it down).
	info, err := c.mem.Stat(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Read(context.Background(), c.nodes[0].GRPCAddr(),
		readpath.Request{URI: uri, Offset: off, Length: length, ExpectedVersion: info.Version}, &buf)
	got := buf.Bytes()
	t.Logf("client stats %+v", cl.Stats())
	if err == nil {
		same := func(ref []byte) (n int) {
			for i := range got {
				if got[i] == ref[off+int64(i)] {
					n++
				}
			}
			return n
		}
		t.Fatalf("client read succeeded with %d bytes, %d of them equal to the asked version's, %d to the other version's; want an error (the peer served another version)",
			len(got), same(data), same(other))
	}
	if status.Code(err) != codes.DataLoss {
		t.Fatalf("client read: %v, want DATA_LOSS", err)
	}
}

// TestVersionHeader: a node's ReadRange stream names, in its header
// metadata, the version its bytes come from, the one its summary names.
func TestVersionHeader(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1})
	c.mem.Put("s3://bkt/versioned", randBytes(81, 3*tPage))
	stream, err := dial(t, c.nodes[0].GRPCAddr()).ReadRange(context.Background(), &cachev1.ReadRangeRequest{Uri: "s3://bkt/versioned", Length: 3 * tPage})
	if err != nil {
		t.Fatal(err)
	}
	var version string
	for {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if s := resp.GetSummary(); s != nil {
			version = s.GetVersion()
			break
		}
	}
	md, err := stream.Header()
	if err != nil {
		t.Fatal(err)
	}
	if got := md.Get(versionHeader); len(got) != 1 || got[0] != version || version == "" {
		t.Fatalf("header %s = %q, summary version %q; want the same version", versionHeader, got, version)
	}
}

// TestPeerOtherVersionThenFails: a peer that ignores ExpectedVersion but
// names, in its header, the version it serves has its bytes refused before
// any is used, so a replica's fill caches none of them even when the
// peer's stream then breaks before its summary (which would otherwise have
// been the only place the version showed).
func TestPeerOtherVersionThenFails(t *testing.T) {
	const size = 12 * tBlock
	data, other := randBytes(71, size), randBytes(72, size)
	uri := "s3://bkt/other-version-then-fail"
	peer := &fakePeer{readRange: func(req *cachev1.ReadRangeRequest, s grpc.ServerStreamingServer[cachev1.ReadRangeResponse]) error {
		if err := s.SetHeader(metadata.Pairs(versionHeader, "other")); err != nil {
			return err
		}
		end := min(int64(len(other)), req.Offset+req.Length)
		half := req.Offset + (end-req.Offset)/2
		for off := req.Offset; off < half; off += tPage {
			if err := s.Send(&cachev1.ReadRangeResponse{Msg: &cachev1.ReadRangeResponse_Chunk{Chunk: &cachev1.Chunk{
				Offset: off, Data: other[off:min(half, off+tPage)]}}}); err != nil {
				return err
			}
		}
		return status.Error(codes.Unavailable, "origin failed")
	}}
	c := newTCluster(t, tclusterOpts{n: 1, repl: 2})
	c.addMember("zz-peer", startFakePeer(t, peer))
	c.mem.Put(uri, data)
	off := blockListed(t, c, uri, size/tBlock, "zz-peer", "n0") * tBlock // n0 fills from the peer
	for i := range 2 {
		got, _, err := read(t, c.nodes[0], readpath.Request{URI: uri, Offset: off, Length: tBlock})
		if err != nil || !bytes.Equal(got, data[off:off+tBlock]) {
			t.Fatalf("read %d of the replica's block: %v, bytes of the asked version: %v", i+1, err, bytes.Equal(got, data[off:off+tBlock]))
		}
	}
}

// otherVersionSetup starts one node (replication 1) beside a fake peer
// that serves other whatever version it is asked for, stores data at uri
// in the origin, and returns the cluster and the offset of the first block
// the peer owns.
func otherVersionSetup(t *testing.T, uri string, data, other []byte) (*tcluster, int64) {
	t.Helper()
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1})
	c.addMember("zz-peer", startFakePeer(t, otherVersionPeer(other)))
	c.mem.Put(uri, data)
	b := blocksOf(c, uri, 0, int64(len(data)), "zz-peer")
	if len(b) == 0 {
		t.Fatal("setup: the peer owns no block")
	}
	return c, b[0] * tBlock
}
