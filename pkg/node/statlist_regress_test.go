package node_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// TestListDoesNotRollBackToOldBytes: end to end against versitygw. A node
// lists a prefix (as the gateway's ListObjects does) while one of the
// listed objects is overwritten and, after a stat TTL, a Stat answers the
// new version; after the listing, Stat and reads stay on the new version.
// Was: the listing's older answer replaced the newer stat entry
// (origin.StatCache.List), so for a whole new TTL Stat (HEAD,
// client.Open's pin, StatParquet's footer) answered the old version and a
// read served its cached pages.
func TestListDoesNotRollBackToOldBytes(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	const size = 200_000
	v1, v2 := randBytes(301, size), randBytes(302, size)
	gw.Put(t, "lr/a.bin", randBytes(300, 10))
	gw.Put(t, "lr/b.bin", v1)
	uri := gw.URI("lr/b.bin")
	c := nodetest.Start(t, nodetest.Options{N: 1, VersityGW: gw, StatTTL: time.Second})
	n, cl := c.Nodes[0], c.Client(t, 0)
	if got, _ := rangeRead(t, cl, uri, 0, size); !bytes.Equal(got, v1) {
		t.Fatal("first read: not v1")
	}
	var etag2 string
	sawV2 := false
	err := n.List(context.Background(), gw.URI("lr/"), func(info origin.Info) error {
		if info.URI != gw.URI("lr/a.bin") {
			return nil
		}
		etag2 = origin.NormalizeETag(gw.Put(t, "lr/b.bin", v2))
		time.Sleep(1200 * time.Millisecond)          // the stat entry expires: the next read revalidates
		st, err := n.Stat(context.Background(), uri) // a HEAD through the gateway, say
		sawV2 = err == nil && st.Version == etag2
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawV2 {
		t.Fatal("setup: the read after the overwrite did not return v2")
	}
	st, err := n.Stat(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != etag2 {
		t.Errorf("after answering %s, the node's Stat answers %s (the listing's old version)", etag2, st.Version)
	}
	switch got, s := rangeRead(t, cl, uri, 0, size); {
	case bytes.Equal(got, v1):
		t.Errorf("after the node answered version %s, a read served the old version's bytes (version %s, %d local-hit bytes)", etag2, s.Version, s.LocalHitBytes)
	case !bytes.Equal(got, v2):
		t.Error("a read returned neither version")
	}
}
