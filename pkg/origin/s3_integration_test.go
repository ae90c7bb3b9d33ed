package origin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// These tests run against a real S3 server (versitygw, posix backend) on
// loopback. See package origintest for how the server is found and started.

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestS3IntegrationRangeReads(t *testing.T) {
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()
	data := randomBytes(1, 3<<20+12345) // not a multiple of any page size
	etag := g.Put(t, "dir/data.bin", data)

	info, err := store.Stat(ctx, g.URI("dir/data.bin"))
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("Stat size = %d, want %d", info.Size, len(data))
	}
	if info.Version != origin.NormalizeETag(etag) || !strings.HasPrefix(info.Version, `"`) {
		t.Errorf("Stat version = %s, want the quoted PutObject ETag %s", info.Version, etag)
	}
	if info.URI != g.URI("dir/data.bin") || info.ModTime.IsZero() {
		t.Errorf("Stat info = %+v", info)
	}

	size := int64(len(data))
	cases := []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantEOF bool
	}{
		{"head", 0, 100, 100, false},
		{"middle", 1<<20 + 7, 1 << 20, 1 << 20, false},
		{"one byte", 12345, 1, 1, false},
		{"exact tail", size - 4096, 4096, 4096, false},
		{"past the end", size - 100, 4096, 100, true},
		{"whole object", 0, int(size), int(size), false},
		{"at end", size, 10, 0, true},
		{"beyond end", size + 10, 10, 0, true},
		{"empty buffer", 5, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := make([]byte, tc.n)
			n, err := store.ReadAt(ctx, info.URI, info.Version, p, tc.off)
			if n != tc.wantN {
				t.Fatalf("ReadAt(off=%d, len=%d) n = %d, want %d (err %v)", tc.off, tc.n, n, tc.wantN, err)
			}
			if tc.wantEOF != (err == io.EOF) || (!tc.wantEOF && err != nil) {
				t.Fatalf("ReadAt(off=%d, len=%d) err = %v, want EOF=%v", tc.off, tc.n, err, tc.wantEOF)
			}
			if n > 0 && !bytes.Equal(p[:n], data[tc.off:tc.off+int64(n)]) {
				t.Fatalf("ReadAt(off=%d, len=%d) bytes differ from the file", tc.off, tc.n)
			}
		})
	}

	// io.ReaderAt adapter: the whole object through io.SectionReader.
	ra := origin.NewReaderAt(ctx, store, info)
	got, err := io.ReadAll(io.NewSectionReader(ra, 0, ra.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll through ReaderAt: err %v, equal %v", err, bytes.Equal(got, data))
	}
}

func TestS3IntegrationOverwriteNeverMixes(t *testing.T) {
	g := origintest.StartVersityGW(t)
	// Record the statuses, to check that the server itself refused the
	// stale ETag (412 to If-Match), not only our response-ETag check.
	var statuses sync.Map
	cfg := g.Config()
	cfg.Observe = func(a origin.Attempt) { statuses.Store(a.Status, true) }
	store, err := origin.NewS3Store(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	uri := g.URI("t/obj")
	v1 := randomBytes(2, 64<<10)
	g.Put(t, "t/obj", v1)
	old, err := store.Stat(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 1000)
	if _, err := store.ReadAt(ctx, uri, old.Version, p, 0); err != nil {
		t.Fatalf("read of current version: %v", err)
	}

	v2 := randomBytes(3, 64<<10) // same size, different bytes
	g.Put(t, "t/obj", v2)
	for _, tc := range []struct {
		name string
		off  int64
		n    int
	}{{"head", 0, 1000}, {"tail past end", 64<<10 - 10, 100}, {"past end", 1 << 20, 10}} {
		p := make([]byte, tc.n)
		n, err := store.ReadAt(ctx, uri, old.Version, p, tc.off)
		if !errors.Is(err, origin.ErrVersionChanged) {
			t.Fatalf("%s: ReadAt with the old ETag = (%d, %v), want ErrVersionChanged", tc.name, n, err)
		}
		if n != 0 {
			t.Fatalf("%s: ReadAt with the old ETag returned n = %d, want 0", tc.name, n)
		}
	}
	if _, ok := statuses.Load(412); !ok {
		t.Errorf("the server never answered 412 Precondition Failed to If-Match")
	}
	cur, err := store.Stat(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Version == old.Version {
		t.Fatalf("ETag did not change after overwrite: %s", cur.Version)
	}
	if _, err := store.ReadAt(ctx, uri, cur.Version, p, 0); err != nil || !bytes.Equal(p, v2[:1000]) {
		t.Fatalf("read of the new version: err %v, bytes equal %v", err, bytes.Equal(p, v2[:1000]))
	}
	// A shorter rewrite: offsets past the new end must still say
	// "changed", not "EOF", for the old version.
	g.Put(t, "t/obj", []byte("short"))
	if n, err := store.ReadAt(ctx, uri, cur.Version, p, 32<<10); !errors.Is(err, origin.ErrVersionChanged) {
		t.Fatalf("read past the end of a shrunk object with the old ETag = (%d, %v), want ErrVersionChanged", n, err)
	}
}

func TestS3IntegrationNotFound(t *testing.T) {
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()
	p := make([]byte, 10)

	if _, err := store.Stat(ctx, g.URI("missing")); !errors.Is(err, origin.ErrNotFound) {
		t.Errorf("Stat(missing object) = %v, want ErrNotFound", err)
	}
	if _, err := store.ReadAt(ctx, g.URI("missing"), `"abc"`, p, 0); !errors.Is(err, origin.ErrNotFound) {
		t.Errorf("ReadAt(missing object) = %v, want ErrNotFound", err)
	}
	if _, err := store.Stat(ctx, "s3://no-such-bucket/k"); !errors.Is(err, origin.ErrNotFound) {
		t.Errorf("Stat(missing bucket) = %v, want ErrNotFound", err)
	}
	_, err := store.ReadAt(ctx, "s3://no-such-bucket/k", "", p, 0)
	if !errors.Is(err, origin.ErrBucketNotFound) || !errors.Is(err, origin.ErrNotFound) {
		t.Errorf("ReadAt(missing bucket) = %v, want ErrBucketNotFound (and ErrNotFound)", err)
	}
	err = store.List(ctx, "s3://no-such-bucket/", func(origin.Info) error { return nil })
	if !errors.Is(err, origin.ErrBucketNotFound) {
		t.Errorf("List(missing bucket) = %v, want ErrBucketNotFound", err)
	}
}

func TestS3IntegrationList(t *testing.T) {
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()
	keys := []string{"tbl/a.parquet", "tbl/b.parquet", "tbl/sub/c.parquet", "tbl2/x", "other/y"}
	etags := map[string]string{}
	for i, k := range keys {
		etags[g.URI(k)] = g.Put(t, k, randomBytes(uint64(10+i), 100+i))
	}
	list := func(prefix string) []origin.Info {
		var out []origin.Info
		if err := store.List(ctx, prefix, func(info origin.Info) error { out = append(out, info); return nil }); err != nil {
			t.Fatalf("List(%s): %v", prefix, err)
		}
		return out
	}
	uris := func(infos []origin.Info) []string {
		var out []string
		for _, i := range infos {
			out = append(out, i.URI)
		}
		return out
	}
	got := list(g.URI("tbl/"))
	want := []string{g.URI("tbl/a.parquet"), g.URI("tbl/b.parquet"), g.URI("tbl/sub/c.parquet")}
	if !slices.Equal(uris(got), want) {
		t.Fatalf("List(tbl/) = %v, want %v", uris(got), want)
	}
	for _, info := range got {
		st, err := store.Stat(ctx, info.URI)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version != info.Version || st.Size != info.Size {
			t.Errorf("List says %s is (%d, %s); Stat says (%d, %s)", info.URI, info.Size, info.Version, st.Size, st.Version)
		}
		if info.Version != origin.NormalizeETag(etags[info.URI]) {
			t.Errorf("List version of %s = %s, want %s", info.URI, info.Version, etags[info.URI])
		}
	}
	if got := uris(list(g.URI("tbl"))); len(got) != 4 {
		t.Errorf("List(tbl) = %v, want 4 objects (tbl/ and tbl2/)", got)
	}
	if got := list(g.URI("nothing/")); len(got) != 0 {
		t.Errorf("List(nothing/) = %v, want none", uris(got))
	}
	if got := list("s3://" + g.Bucket); len(got) != len(keys) {
		t.Errorf("List(bucket) = %v, want %d", uris(got), len(keys))
	}
	// Pagination: more keys than one page of a small MaxKeys would hold is
	// covered by the paginator; check fn's error stops the listing.
	stop := errors.New("stop")
	n := 0
	err := store.List(ctx, g.URI(""), func(origin.Info) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("List with a failing callback = (%v, %d calls), want (stop, 1)", err, n)
	}
}

func TestS3IntegrationListManyPages(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1100 objects")
	}
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()
	const n = 1100 // > 1000, the default page size
	for i := 0; i < n; i++ {
		_, err := g.Client().PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(g.Bucket), Key: aws.String(fmt.Sprintf("many/%04d", i)),
			Body: strings.NewReader("x"),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	count := 0
	if err := store.List(ctx, g.URI("many/"), func(origin.Info) error { count++; return nil }); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("listed %d objects, want %d", count, n)
	}
}

// TestS3IntegrationParallelRangeReads issues many concurrent range GETs
// through one store (one connection pool), as a cache node filling pages
// does, and checks every byte.
func TestS3IntegrationParallelRangeReads(t *testing.T) {
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()
	data := randomBytes(5, 4<<20)
	g.Put(t, "par/obj", data)
	info, err := store.Stat(ctx, g.URI("par/obj"))
	if err != nil {
		t.Fatal(err)
	}
	const workers, reads = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*reads)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			for i := 0; i < reads; i++ {
				off := r.Int64N(int64(len(data)))
				p := make([]byte, 1+r.IntN(256<<10))
				n, err := store.ReadAt(ctx, info.URI, info.Version, p, off)
				if err != nil && err != io.EOF {
					errs <- err
					return
				}
				if !bytes.Equal(p[:n], data[off:off+int64(n)]) || (err == nil && n != len(p)) {
					errs <- fmt.Errorf("worker %d: wrong bytes at %d+%d (n=%d, err=%v)", w, off, len(p), n, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestS3IntegrationOddObjects: an empty object, and keys that need
// escaping on the wire, which S3 URIs carry literally.
func TestS3IntegrationOddObjects(t *testing.T) {
	g := origintest.StartVersityGW(t)
	store := g.Store(t)
	ctx := context.Background()

	g.Put(t, "empty", nil)
	info, err := store.Stat(ctx, g.URI("empty"))
	if err != nil || info.Size != 0 {
		t.Fatalf("Stat(empty) = (%+v, %v)", info, err)
	}
	if n, err := store.ReadAt(ctx, info.URI, info.Version, make([]byte, 10), 0); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt(empty) = (%d, %v), want (0, EOF)", n, err)
	}

	for _, key := range []string{"dir with space/a+b=c.parquet", "ünï/cødé %41.bin", "a/b?c#d"} {
		data := randomBytes(uint64(len(key)), 1000)
		g.Put(t, key, data)
		info, err := store.Stat(ctx, g.URI(key))
		if err != nil {
			t.Fatalf("Stat(%q) = %v", key, err)
		}
		p := make([]byte, 100)
		if _, err := store.ReadAt(ctx, info.URI, info.Version, p, 900); err != nil || !bytes.Equal(p, data[900:]) {
			t.Fatalf("ReadAt(%q) = %v, bytes equal %v", key, err, bytes.Equal(p, data[900:]))
		}
		found := false
		_ = store.List(ctx, g.URI(key[:3]), func(i origin.Info) error {
			found = found || i.URI == info.URI
			return nil
		})
		if !found {
			t.Errorf("List did not return %q", info.URI)
		}
	}
}
