package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/readpath"
	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// parquetFile writes rows rows of (id int64, name string) in row groups of
// perGroup rows, uncompressed so the file spans several test blocks.
func parquetFile(t testing.TB, rows, perGroup int) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 31)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%08d-%x", i, i*i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false))
	if err := pqarrow.WriteTable(tbl, &buf, int64(perGroup), props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestStatParquet: Stat answers row groups and column chunks for Parquet
// objects (by extension or by magic), keeps the parsed footer per
// (URI, version), and says "not Parquet" for other objects.
func TestStatParquet(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 2})
	pq := parquetFile(t, 20000, 4000)
	want, err := parquetx.ReadFooter(bytes.NewReader(pq), int64(len(pq)))
	if err != nil {
		t.Fatal(err)
	}
	c.mem.Put("s3://bkt/t.parquet", pq)
	c.mem.Put("s3://bkt/000000_0", pq) // Hive names files without an extension
	c.mem.Put("s3://bkt/plain.bin", randBytes(1, 100_000))
	bad := append(append([]byte("PAR1"), randBytes(2, 5000)...), "PAR1"...)
	c.mem.Put("s3://bkt/bad.parquet", bad)
	cl := dial(t, c.nodes[0].GRPCAddr())
	ctx := context.Background()
	for _, uri := range []string{"s3://bkt/t.parquet", "s3://bkt/000000_0"} {
		r, err := cl.Stat(ctx, &cachev1.StatRequest{Uri: uri})
		if err != nil {
			t.Fatal(err)
		}
		if !r.GetParquet() || r.GetSize() != int64(len(pq)) || r.GetNumRows() != 20000 || len(r.GetRowGroups()) != len(want.RowGroups) {
			t.Fatalf("%s: parquet %v size %d rows %d groups %d", uri, r.GetParquet(), r.GetSize(), r.GetNumRows(), len(r.GetRowGroups()))
		}
		if r.GetVersion() == "" || r.GetLastModifiedUnixNano() == 0 {
			t.Fatalf("%s: version %q mtime %d", uri, r.GetVersion(), r.GetLastModifiedUnixNano())
		}
		for i, g := range r.GetRowGroups() {
			w := want.RowGroups[i]
			if int(g.GetIndex()) != w.Index || g.GetOffset() != w.Offset || g.GetLength() != w.Length || g.GetNumRows() != w.NumRows ||
				len(g.GetColumns()) != 2 {
				t.Fatalf("row group %d: %v, want %+v", i, g, w)
			}
			for j, col := range g.GetColumns() {
				if col.GetPath() != w.Columns[j].Path || col.GetOffset() != w.Columns[j].Offset || col.GetLength() != w.Columns[j].Length {
					t.Fatalf("row group %d column %d: %v, want %+v", i, j, col, w.Columns[j])
				}
			}
		}
	}
	before := c.nodes[0].footers.Stats()
	if _, err := cl.Stat(ctx, &cachev1.StatRequest{Uri: "s3://bkt/t.parquet"}); err != nil {
		t.Fatal(err)
	}
	if after := c.nodes[0].footers.Stats(); after.Hits != before.Hits+1 || after.Misses != before.Misses {
		t.Fatalf("footer cache: %+v then %+v, want one more hit", before, after)
	}
	for _, uri := range []string{"s3://bkt/plain.bin", "s3://bkt/bad.parquet"} {
		r, err := cl.Stat(ctx, &cachev1.StatRequest{Uri: uri})
		if err != nil || r.GetParquet() || len(r.GetRowGroups()) != 0 {
			t.Fatalf("%s: %v %v, want a plain stat", uri, r, err)
		}
	}
	if _, err := cl.Stat(ctx, &cachev1.StatRequest{Uri: "s3://bkt/nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("missing object: %v", err)
	}
}

// TestPrefetch: Prefetch through any node loads row-group column chunks
// and byte ranges into the owners' caches (a non-owner forwards), so a
// later read misses nothing; a second Prefetch finds everything cached.
// With replication 1: Prefetch warms one node of each preference list (the
// receiving node when it is in the list, else the owner), so with 2 a read
// on the list's other node would miss.
func TestPrefetch(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 3, repl: 1})
	pq := parquetFile(t, 20000, 4000)
	uri := "s3://bkt/pre.parquet"
	c.mem.Put(uri, pq)
	f, err := parquetx.ReadFooter(bytes.NewReader(pq), int64(len(pq)))
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := parquetx.ChunkRanges(f, []int{1, 3}, []string{"name"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range ranges {
		total += r.Length
	}
	cl := dial(t, c.nodes[0].GRPCAddr())
	ctx := context.Background()
	req := &cachev1.PrefetchRequest{Uri: uri, RowGroups: []int32{1, 3}, Columns: []string{"name"}}
	r, err := cl.Prefetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r.GetFetchedBytes() != total || r.GetCachedBytes() != 0 {
		t.Fatalf("first prefetch: fetched %d cached %d, want %d fetched", r.GetFetchedBytes(), r.GetCachedBytes(), total)
	}
	for _, rg := range ranges {
		_, s := mustRead(t, c.nodes[0], readpath.Request{URI: uri, Offset: rg.Offset, Length: rg.Length})
		if s.OriginBytes != 0 {
			t.Fatalf("read of prefetched %v: %+v", rg, s)
		}
	}
	r, err = cl.Prefetch(ctx, req)
	if err != nil || r.GetFetchedBytes() != 0 || r.GetCachedBytes() != total {
		t.Fatalf("second prefetch: %v %v", r, err)
	}
	// Byte ranges too, from another node.
	cl1 := dial(t, c.nodes[1].GRPCAddr())
	r, err = cl1.Prefetch(ctx, &cachev1.PrefetchRequest{Uri: uri, Ranges: []*cachev1.ByteRange{{Offset: 0, Length: 200_000}}})
	if err != nil || r.GetFetchedBytes()+r.GetCachedBytes() != 200_000 {
		t.Fatalf("range prefetch: %v %v", r, err)
	}
	_, s := mustRead(t, c.nodes[2], readpath.Request{URI: uri, Offset: 0, Length: 200_000})
	if s.OriginBytes != 0 {
		t.Fatalf("read of prefetched range: %+v", s)
	}
	// Every page is on its owner only.
	for _, n := range c.nodes {
		if n.CacheStats().UsedBytes > 0 && ownedBytes(c, uri, 0, int64(len(pq)), n.ID()) == 0 {
			t.Fatalf("%s cached pages it does not own", n.ID())
		}
	}
	c.mem.Put("s3://bkt/plain.bin", randBytes(3, 10_000))
	for name, tc := range map[string]struct {
		req  *cachev1.PrefetchRequest
		code codes.Code
	}{
		"no such row group": {&cachev1.PrefetchRequest{Uri: uri, RowGroups: []int32{99}}, codes.InvalidArgument},
		"no such column":    {&cachev1.PrefetchRequest{Uri: uri, RowGroups: []int32{0}, Columns: []string{"nope"}}, codes.InvalidArgument},
		"not parquet":       {&cachev1.PrefetchRequest{Uri: "s3://bkt/plain.bin", RowGroups: []int32{0}}, codes.InvalidArgument},
		"nothing asked":     {&cachev1.PrefetchRequest{Uri: uri}, codes.InvalidArgument},
		"past the end":      {&cachev1.PrefetchRequest{Uri: uri, Ranges: []*cachev1.ByteRange{{Offset: 1 << 40, Length: 1}}}, codes.OutOfRange},
		"negative":          {&cachev1.PrefetchRequest{Uri: uri, Ranges: []*cachev1.ByteRange{{Offset: -1, Length: 1}}}, codes.InvalidArgument},
		"missing object":    {&cachev1.PrefetchRequest{Uri: "s3://bkt/nope", Ranges: []*cachev1.ByteRange{{Offset: 0, Length: 1}}}, codes.NotFound},
	} {
		if _, err := cl.Prefetch(ctx, tc.req); status.Code(err) != tc.code {
			t.Errorf("%s: %v, want %v", name, err, tc.code)
		}
	}
}

// TestPrefetchOwnerDown: prefetching a block whose owner is unreachable
// fails with UNAVAILABLE and caches nothing here. (Replication 1: the dead
// member is the only node of its blocks' lists.)
func TestPrefetchOwnerDown(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1})
	c.addMember("zz-dead", deadAddr(t))
	uri := "s3://bkt/pd.bin"
	const size = 20 * tBlock
	c.mem.Put(uri, randBytes(4, size))
	_, err := c.nodes[0].Prefetch(context.Background(), PrefetchRequest{URI: uri, Ranges: []parquetx.Range{{Offset: 0, Length: size}}})
	if Code(err) != codes.Unavailable {
		t.Fatalf("prefetch with a dead owner: %v", err)
	}
	if used, own := c.nodes[0].CacheStats().UsedBytes, ownedBytes(c, uri, 0, size, "n0"); used > own {
		t.Fatalf("cached %d bytes, owns %d", used, own)
	}
}
