package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/node/nodetest"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/readpath"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

// parquetFile writes rows rows in row groups of rowsPerGroup with arrow-go.
func parquetFile(t *testing.T, rows, rowsPerGroup int) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	names := b.Field(1).(*array.StringBuilder)
	scores := b.Field(2).(*array.Float64Builder)
	tags := b.Field(3).(*array.ListBuilder)
	tagVals := tags.ValueBuilder().(*array.StringBuilder)
	for i := range rows {
		ids.Append(int64(i) * 7919)
		if i%11 == 0 {
			names.AppendNull()
		} else {
			names.Append(fmt.Sprintf("name-%d-%d", i%13, i))
		}
		if i%5 == 0 {
			scores.AppendNull()
		} else {
			scores.Append(float64(i) / 3)
		}
		tags.Append(true)
		for j := range i % 4 {
			tagVals.Append(fmt.Sprintf("t%d", (i+j)%9))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf,
		parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(rowsPerGroup)), parquet.WithCompression(compress.Codecs.Snappy)),
		pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readTable reads a whole Parquet file with arrow-go from r.
func readTable(t *testing.T, r parquet.ReaderAtSeeker) (arrow.Table, int) {
	t.Helper()
	pf, err := file.NewParquetReader(r)
	if err != nil {
		t.Fatalf("NewParquetReader: %v", err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: 1000}, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("ReadTable: %v", err)
	}
	return tbl, pf.NumRowGroups()
}

// TestParquetThroughNodes: arrow-go's Parquet reader reads a real Parquet
// file from a real S3 server through a real cache node with client.Open,
// and gets the rows it gets from the file directly; the second read is
// served from the cluster's caches.
func TestParquetThroughNodes(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	data := parquetFile(t, 60_000, 7_000)
	gw.Put(t, "tbl/part-0.parquet", data)
	uri := gw.URI("tbl/part-0.parquet")
	cl := nodetest.Start(t, nodetest.Options{N: 3, VersityGW: gw})
	c, err := client.New(client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	want, wantGroups := readTable(t, bytes.NewReader(data))
	defer want.Release()
	if wantGroups < 5 {
		t.Fatalf("test file has %d row groups, want several", wantGroups)
	}

	addr := cl.Nodes[1].GRPCAddr()
	var last readpath.Summary
	for pass := range 2 {
		r, err := c.Open(context.Background(), addr, uri)
		if err != nil {
			t.Fatal(err)
		}
		info := r.Info()
		if !info.Parquet || len(info.RowGroups) != wantGroups || info.NumRows != 60_000 || info.Size != int64(len(data)) {
			t.Fatalf("Stat: parquet %v, %d row groups, %d rows, size %d; want %d row groups of 60000 rows, size %d",
				info.Parquet, len(info.RowGroups), info.NumRows, info.Size, wantGroups, len(data))
		}
		got, groups := readTable(t, r)
		if groups != wantGroups || got.NumRows() != want.NumRows() || !array.TableEqual(got, want) {
			t.Fatalf("pass %d: the table read through Locus (%d rows, %d groups) differs from the file's (%d rows, %d groups)",
				pass, got.NumRows(), groups, want.NumRows(), wantGroups)
		}
		got.Release()
		last = r.Summary()
		if err := last.Check(); err != nil || last.Bytes == 0 || last.Version != info.Version {
			t.Fatalf("pass %d: summary %+v: %v", pass, last, err)
		}
		t.Logf("pass %d: %d bytes: local %d, peer %d, origin %d", pass, last.Bytes, last.LocalHitBytes, last.PeerHitBytes, last.OriginBytes)
	}
	if last.OriginBytes != 0 || last.LocalHitBytes+last.PeerHitBytes != last.Bytes {
		t.Fatalf("second read: %+v; want every byte from the cluster's caches", last)
	}
}

// TestFallbackWhenNodeStops: the node a client reads from stops; reads
// still succeed, from the origin, counted as owner-unavailable.
func TestFallbackWhenNodeStops(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	gw.Put(t, "obj", data)
	cl := nodetest.Start(t, nodetest.Options{N: 2, VersityGW: gw})
	c, err := client.New(client.Config{Origin: cl.Store(), DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := cl.Nodes[0].GRPCAddr()
	var buf bytes.Buffer
	if _, err := c.ReadRange(context.Background(), addr, gw.URI("obj"), 1000, 2<<20, &buf); err != nil || !bytes.Equal(buf.Bytes(), data[1000:1000+2<<20]) {
		t.Fatalf("read through the node: %v", err)
	}
	r, err := c.Open(context.Background(), addr, gw.URI("obj"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Nodes[0].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	sum, err := c.ReadRange(context.Background(), addr, gw.URI("obj"), 5, 3<<20, &buf)
	if err != nil || !bytes.Equal(buf.Bytes(), data[5:]) {
		t.Fatalf("read with the node stopped: %v (%d bytes)", err, buf.Len())
	}
	if sum.Misses[readpath.OwnerUnavailable].Bytes != int64(len(data)-5) {
		t.Fatalf("summary %+v: want every byte as owner_unavailable", sum)
	}
	got, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReaderAt with the node stopped: %v", err)
	}
	if st := c.Stats(); st.Fallbacks < 2 {
		t.Fatalf("stats %+v: want the fallbacks counted", st)
	}
}

// TestTLS: the client reads from nodes that require client certificates.
func TestTLS(t *testing.T) {
	gw := origintest.StartVersityGW(t)
	gw.Put(t, "obj", []byte("secret bytes"))
	files := nodetest.NewTLS(t)
	cl := nodetest.Start(t, nodetest.Options{N: 1, VersityGW: gw, TLS: files, MTLS: true})
	c, err := client.New(client.Config{TLS: files.ClientConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var buf bytes.Buffer
	if _, err := c.ReadRange(context.Background(), cl.Nodes[0].GRPCAddr(), gw.URI("obj"), 0, 100, &buf); err != nil || buf.String() != "secret bytes" {
		t.Fatalf("mTLS read: %v %q", err, buf.String())
	}
	// Without a client certificate the node refuses the connection.
	c2, err := client.New(client.Config{TLS: files.ClientConfigNoCert()})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.ReadRange(context.Background(), cl.Nodes[0].GRPCAddr(), gw.URI("obj"), 0, 100, io.Discard); !errors.Is(err, client.ErrNodeUnavailable) {
		t.Fatalf("read without a client certificate: %v, want ErrNodeUnavailable", err)
	}
}
