package parquetx_test

// Regression and edge-case tests from an adversarial review of parquetx
// (2026-11-30). Files are real ones written with arrow-go
// (testdata_test.go), or footers built with arrow-go's own metadata
// builder.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/parquetx"
)

// TestEmptyTableFile is a regression test (it failed before its fix).
//
// What was wrong: a table with no rows written by arrow-go's
// pqarrow.WriteTable (an empty partition, a query that filtered every
// row: common in a lake) is a valid Parquet file that arrow-go itself
// reads back as 0 rows, but ReadFooter rejects it as ErrCorrupt: "row
// group 0 column "id" claims bytes [0, 0+0), outside the data area". So
// `locusctl plan` and `warm` skip it with a "corrupt" warning and exit 1,
// Plan fails the whole prefix (Plan's doc: a corrupt file fails the plan),
// and a node's Stat says "not Parquet".
//
// arrow-go v18.8 writes one row group with 0 rows whose column chunks
// hold no values and are recorded with data_page_offset 0 (and
// total_compressed_size 0 here; 14 for a one-column table, see
// TestPlanEmptyFile in cmd/locusctl). arrow-go never reads those
// chunks (the row group has no rows), so its reader does not mind.
//
// Expected: ReadFooter succeeds with NumRows 0; PlanSplits returns no
// split (the row group has no rows and nothing to read).
//
// Root cause (before the fix): pkg/parquetx/footer.go:279 rejects every chunk starting
// before byte 4, including those of a row group with no rows.
//
// Fix (applied): in buildFooter, a row group with NumRows 0 whose chunks
// all have NumValues 0 holds nothing to read: skip their range check,
// record its chunks and span as empty (Offset 4, Length 0, as for a row
// group without columns), so PlanSplits drops it as it already drops "no
// rows and no bytes". Keep rejecting bad ranges of chunks that hold
// values.
func TestEmptyTableFile(t *testing.T) {
	data, _ := writeParquet(t, writeOpts{rows: 0, rowsPerGroup: 100})

	// arrow-go reads it: a valid file with no rows.
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("arrow-go cannot open its own empty file: %v", err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil || tbl.NumRows() != 0 {
		t.Fatalf("arrow-go ReadTable: %v", err)
	}
	tbl.Release()

	f, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("ReadFooter of an empty table written by arrow-go: %v; want a footer with 0 rows", err)
	}
	if f.NumRows != 0 {
		t.Fatalf("NumRows %d", f.NumRows)
	}
	if s := parquetx.PlanSplits(origin.Info{URI: "s3://b/empty.parquet", Size: int64(len(data))}, f); len(s) != 0 {
		t.Fatalf("splits %+v; want none for a file without rows", s)
	}
}

// buildFooterFile writes a file whose footer arrow-go's metadata builder
// makes from rows (one row group each) and chunk ranges (per row group,
// one [offset, length) per leaf column of the test schema), with the data
// area filled with zeros up to dataLen.
func buildFooterFile(t *testing.T, dataLen int64, rows []int, chunks [][][2]int64) []byte {
	t.Helper()
	props := parquet.NewWriterProperties()
	sc, err := pqarrow.ToParquet(testSchema, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	fb := metadata.NewFileMetadataBuilder(sc, props, nil)
	for i, n := range rows {
		rg := fb.AppendRowGroup()
		rg.SetNumRows(n)
		for j := 0; j < sc.NumColumns(); j++ {
			c := chunks[i][j]
			if err := rg.NextColumnChunk().Finish(metadata.ChunkMetaInfo{
				NumValues: int64(n), DataPageOffset: c[0], CompressedSize: c[1], UncompressedSize: c[1], IndexPageOffset: -1,
			}, false, false, metadata.EncodingStats{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := rg.Finish(0, int16(i)); err != nil {
			t.Fatal(err)
		}
	}
	md, err := fb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.WriteString("PAR1")
	buf.Write(make([]byte, dataLen-4))
	n, err := md.WriteTo(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
	buf.WriteString("PAR1")
	return buf.Bytes()
}

// chunksAt returns one row group's chunk ranges: ncols consecutive chunks
// of size each, from off.
func chunksAt(ncols int, off, size int64) [][2]int64 {
	out := make([][2]int64, ncols)
	for j := range out {
		out[j] = [2]int64{off + int64(j)*size, size}
	}
	return out
}

// TestRowCountOverflow is a regression test (it failed before its fix).
//
// What was wrong: three row groups of MaxInt64, MaxInt64 and 2 rows sum,
// in int64, to exactly 0 (2^64 wraps), and the file says 0 rows, so the
// footer passes the "row groups hold as many rows as the file says"
// check and ReadFooter accepts it: PlanSplits then hands out splits of
// 9.2e18 rows each for a file that claims to be empty (and the sizing of
// a plan's row totals overflows with it). Every byte range of the footer
// is valid, so nothing else catches it.
//
// Expected: ErrCorrupt (the row counts cannot be summed).
//
// Root cause (before the fix): pkg/parquetx/footer.go:256 (sumRows += rg.NumRows) wraps
// silently before the comparison at footer.go:305.
//
// Fix (applied): check for overflow before adding (if rg.NumRows >
// math.MaxInt64-sumRows: ErrCorrupt), or compare with f.NumRows - sumRows
// as the loop goes.
func TestRowCountOverflow(t *testing.T) {
	const ncols = 7 // leaves of testSchema
	data := buildFooterFile(t, 4+3*ncols*10,
		[]int{math.MaxInt64, math.MaxInt64, 2},
		[][][2]int64{chunksAt(ncols, 4, 10), chunksAt(ncols, 4+ncols*10, 10), chunksAt(ncols, 4+2*ncols*10, 10)})
	f, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
	if err == nil {
		t.Fatalf("ReadFooter accepted row groups of %d, %d and %d rows in a file of %d rows; want ErrCorrupt",
			f.RowGroups[0].NumRows, f.RowGroups[1].NumRows, f.RowGroups[2].NumRows, f.NumRows)
	}
	if !errors.Is(err, parquetx.ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
}

// TestBuiltFooterSanity checks the builder helper itself: a sane
// footer built the same way parses, with the ranges it was given, so the
// regression test above fails for the overflow alone.
func TestBuiltFooterSanity(t *testing.T) {
	const ncols = 7
	data := buildFooterFile(t, 4+2*ncols*10, []int{5, 7},
		[][][2]int64{chunksAt(ncols, 4, 10), chunksAt(ncols, 4+ncols*10, 10)})
	f, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Columns) != ncols || f.NumRows != 12 || len(f.RowGroups) != 2 ||
		f.RowGroups[1].Offset != 4+ncols*10 || f.RowGroups[1].Length != ncols*10 {
		t.Fatalf("footer %+v", f)
	}
}

// TestHiddenPrefixComponent is a regression test (it failed before its fix).
//
// What was wrong: ListParquet documents that it skips objects with a path
// component "below the prefix" starting with "_" or "." (split.go:51-53).
// For a prefix without a trailing slash whose last component starts with
// "_" or "." (an operator warming "file:///lake/_staging", or one object
// "s3://lake/tbl/_part-0.parquet"), the component the operator named is
// treated as hidden and nothing is listed: `locusctl plan/warm` then
// report "no Parquet objects under ..." although there are. The same
// directory with a trailing slash lists them.
//
// Expected: both spellings list the two files (the prefix's own
// components are not "below" it).
//
// Root cause (before the fix): pkg/parquetx/split.go:82-83 (hidden) cuts the prefix at its
// last "/" and checks the prefix's partial last component as if it were
// below the prefix.
//
// Fix (applied): check only the part of the URI after the whole prefix:
// rest := strings.TrimPrefix(uri, prefix), and skip the first component
// of rest when the prefix does not end in "/" (it continues the
// prefix's own last component).
func TestHiddenPrefixComponent(t *testing.T) {
	root := t.TempDir()
	data, _ := writeParquet(t, fileVariants[3])
	for _, rel := range []string{"_staging/a.parquet", "_staging/b.parquet"} {
		writeUnder(t, root, rel, data)
	}
	fs := fileStore(t, root)
	count := func(prefix string) int {
		n := 0
		if err := parquetx.ListParquet(context.Background(), fs, prefix, parquetx.ListOptions{}, func(origin.Info) error {
			n++
			return nil
		}); err != nil {
			t.Fatalf("ListParquet(%s): %v", prefix, err)
		}
		return n
	}
	withSlash, without := count("file://"+root+"/_staging/"), count("file://"+root+"/_staging")
	if withSlash != 2 {
		t.Fatalf("with the slash: %d objects, want 2", withSlash)
	}
	if without != 2 {
		t.Fatalf("ListParquet(%q) found %d objects, ListParquet(%q) %d; want 2 for both",
			"file://"+root+"/_staging", without, "file://"+root+"/_staging/", withSlash)
	}
}

// TestTinyAndFakeFiles: files of 0 to 12 bytes, the magic alone,
// a footer length past the file, and "PAR1" + random bytes + a footer
// length that fits + "PAR1" all come back as errors wrapping a sentinel
// from ReadFooter and OpenFile, never a panic.
func TestTinyAndFakeFiles(t *testing.T) {
	var cases [][]byte
	for n := 0; n <= 12; n++ {
		cases = append(cases, bytes.Repeat([]byte("PAR1"), 4)[:n])
	}
	cases = append(cases,
		[]byte("PAR1PAR1"),
		append([]byte("PAR1\x00\x00\x00\x00"), "PAR1"...),
		append([]byte("PAR1\x05\x00\x00\x00"), "PAR1"...),              // length past the file
		append([]byte("PAR1\xff\xff\xff\x7f"), "PAR1"...),              // 2 GiB
		append(append([]byte("PAR1"), make([]byte, 64)...), "PARE"...), // encrypted tail
	)
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 300; i++ {
		n := 1 + r.IntN(200)
		b := []byte("PAR1")
		for range n {
			b = append(b, byte(r.Uint32()))
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(1+r.IntN(n)))
		cases = append(cases, append(b, "PAR1"...))
	}
	for i, data := range cases {
		f, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
		if err == nil {
			// Random bytes that happen to parse must still describe ranges
			// inside the file.
			for _, rg := range f.RowGroups {
				if rg.Offset < 4 || rg.Offset+rg.Length > int64(len(data)) {
					t.Fatalf("case %d: row group %+v outside a %d-byte file", i, rg, len(data))
				}
			}
			continue
		}
		if !errors.Is(err, parquetx.ErrNotParquet) && !errors.Is(err, parquetx.ErrCorrupt) && !errors.Is(err, parquetx.ErrEncrypted) && !errors.Is(err, parquetx.ErrUnsupported) {
			t.Fatalf("case %d (%q): %v wraps no sentinel", i, data, err)
		}
		if _, err := parquetx.OpenFile(bytes.NewReader(data), int64(len(data)), nil, nil); err == nil {
			t.Fatalf("case %d: OpenFile accepted what ReadFooter rejected", i)
		}
	}
}

// TestSplitsPartitionRows: for real files (several row-group
// layouts, including one huge row group and many one-row groups),
// PlanSplits yields each row group exactly once, in order, the split
// rows sum to the file's, and the split ranges are disjoint, inside the
// data area, and each holds its row group's column chunks.
func TestSplitsPartitionRows(t *testing.T) {
	for _, o := range []writeOpts{
		{rows: 20000, rowsPerGroup: 1 << 30}, // one huge row group
		{rows: 37, rowsPerGroup: 1},          // one row per group
		{rows: 3500, rowsPerGroup: 1000, dict: true},
		{rows: 2000, rowsPerGroup: 700, pageIndex: true},
	} {
		data, _ := writeParquet(t, o)
		f := mustFooter(t, data)
		info := origin.Info{URI: "s3://b/t.parquet", Version: `"v"`, Size: int64(len(data))}
		splits := parquetx.PlanSplits(info, f)
		if len(splits) != len(f.RowGroups) {
			t.Fatalf("%s: %d splits for %d row groups", o, len(splits), len(f.RowGroups))
		}
		var rows int64
		prevEnd := int64(4)
		for i, s := range splits {
			if s.RowGroup != i || s.URI != info.URI || s.Version != info.Version {
				t.Fatalf("%s: split %d = %+v", o, i, s)
			}
			if s.Offset < prevEnd || s.Length <= 0 || s.Offset+s.Length > f.FooterRange().Offset {
				t.Fatalf("%s: split %d [%d, %d) overlaps the previous (ends %d) or leaves the data area (ends %d)",
					o, i, s.Offset, s.Offset+s.Length, prevEnd, f.FooterRange().Offset)
			}
			for _, c := range f.RowGroups[i].Columns {
				if c.Offset < s.Offset || c.Offset+c.Length > s.Offset+s.Length {
					t.Fatalf("%s: split %d does not hold column %s", o, i, c.Path)
				}
			}
			prevEnd = s.Offset + s.Length
			rows += s.NumRows
		}
		if rows != int64(o.rows) || rows != f.NumRows {
			t.Fatalf("%s: splits hold %d rows, file %d, written %d", o, rows, f.NumRows, o.rows)
		}
	}
}

// TestFooterCacheVersionKeyed: a rewrite of an object with the same
// URI never gets the old version's footer from a FooterCache.
func TestFooterCacheVersionKeyed(t *testing.T) {
	mem := origintest.NewMemStore()
	a, _ := writeParquet(t, fileVariants[0]) // 4 row groups
	b, _ := writeParquet(t, fileVariants[3]) // 1 row group
	c, err := parquetx.NewFooterCache(parquetx.FooterCacheConfig{})
	if err != nil {
		t.Fatal(err)
	}
	infoA := mem.Put("s3://b/t.parquet", a)
	fa, err := c.Load(context.Background(), mem, infoA)
	if err != nil || len(fa.RowGroups) != 4 {
		t.Fatalf("first version: %v", err)
	}
	infoB := mem.Put("s3://b/t.parquet", b)
	fb, err := c.Load(context.Background(), mem, infoB)
	if err != nil || len(fb.RowGroups) != 1 || fb.Size != int64(len(b)) {
		t.Fatalf("rewritten: %v, %+v", err, fb)
	}
	// The old version's key still maps to the old footer (immutable per
	// version), not to the rewrite's.
	if fa2, err := c.Load(context.Background(), mem, infoA); err != nil || fa2 != fa {
		t.Fatalf("old version's key: %v", err)
	}
}
