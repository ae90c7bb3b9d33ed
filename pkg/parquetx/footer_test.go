package parquetx_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/locuscache/locus/pkg/parquetx"
)

var wantColumns = []string{"id", "name", "score", "tags.list.element", "point.x", "point.y", "flag"}

func mustFooter(t testing.TB, data []byte) *parquetx.Footer {
	t.Helper()
	f, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("ReadFooter: %v", err)
	}
	return f
}

func TestFooterLayout(t *testing.T) {
	for _, o := range fileVariants {
		t.Run(o.String(), func(t *testing.T) {
			data, _ := writeParquet(t, o)
			f := mustFooter(t, data)
			wantGroups := (o.rows + o.rowsPerGroup - 1) / o.rowsPerGroup
			if f.NumRows != int64(o.rows) || len(f.RowGroups) != wantGroups {
				t.Fatalf("footer has %d rows in %d row groups, want %d in %d", f.NumRows, len(f.RowGroups), o.rows, wantGroups)
			}
			if !slices.Equal(f.Columns, wantColumns) {
				t.Fatalf("columns = %v, want %v", f.Columns, wantColumns)
			}
			if fr := f.FooterRange(); fr.End() != int64(len(data)) || fr.Length != int64(f.MetadataLen)+8 {
				t.Fatalf("footer range %v, metadata %d bytes, file %d", fr, f.MetadataLen, len(data))
			}
			// The column chunks tile the data area: they start right after
			// the leading magic, follow each other without gap or overlap,
			// and end where the footer (or, with page indexes, the index
			// area) begins. This is the "exactly" in "cover exactly".
			var chunks []parquetx.Range
			for i, rg := range f.RowGroups {
				if rg.Index != i || len(rg.Columns) != len(wantColumns) {
					t.Fatalf("row group %d: %+v", i, rg)
				}
				lo, hi := rg.Columns[0].Offset, int64(0)
				for j, c := range rg.Columns {
					if c.Path != wantColumns[j] || c.Length <= 0 {
						t.Fatalf("row group %d column %d = %+v", i, j, c)
					}
					lo, hi = min(lo, c.Offset), max(hi, c.Range().End())
					chunks = append(chunks, c.Range())
				}
				if rg.Range() != (parquetx.Range{Offset: lo, Length: hi - lo}) {
					t.Fatalf("row group %d range %v, want the span of its chunks [%d, %d)", i, rg.Range(), lo, hi)
				}
			}
			slices.SortFunc(chunks, func(a, b parquetx.Range) int { return int(a.Offset - b.Offset) })
			pos := int64(4)
			for _, c := range chunks {
				if c.Offset != pos {
					t.Fatalf("chunk %v does not start where the previous ended (%d)", c, pos)
				}
				pos = c.End()
			}
			dataEnd := f.FooterRange().Offset
			if o.pageIndex {
				if pos >= dataEnd {
					t.Fatalf("with page indexes, chunks end at %d, footer at %d: no room for the index", pos, dataEnd)
				}
			} else if pos != dataEnd {
				t.Fatalf("chunks end at %d, the footer starts at %d", pos, dataEnd)
			}
			// Dictionary: the chunk starts at the dictionary page.
			meta := f.Metadata()
			for i := range f.RowGroups {
				cc, err := meta.RowGroup(i).ColumnChunk(1) // "name"
				if err != nil {
					t.Fatal(err)
				}
				if cc.HasDictionaryPage() != o.dict {
					t.Fatalf("name chunk has dictionary page = %v, want %v", cc.HasDictionaryPage(), o.dict)
				}
				want := cc.DataPageOffset()
				if o.dict {
					want = cc.DictionaryPageOffset()
					if want >= cc.DataPageOffset() {
						t.Fatalf("dictionary page at %d is not before the data pages at %d", want, cc.DataPageOffset())
					}
				}
				if got := f.RowGroups[i].Columns[1].Offset; got != want {
					t.Fatalf("name chunk offset %d, want %d", got, want)
				}
			}
		})
	}
}

// rangeReader serves only the allowed byte ranges of data: a read that is
// not inside one allowed range fails and is recorded.
type rangeReader struct {
	data    []byte
	allowed []parquetx.Range

	mu         sync.Mutex // guards violations and served
	violations []parquetx.Range
	served     []parquetx.Range
}

func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	want := parquetx.Range{Offset: off, Length: int64(len(p))}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.allowed {
		if off >= a.Offset && want.End() <= a.End() {
			r.served = append(r.served, want)
			return copy(p, r.data[off:]), nil
		}
	}
	r.violations = append(r.violations, want)
	return 0, fmt.Errorf("read of %v outside the served ranges", want)
}

func readRowGroups(t *testing.T, r io.ReaderAt, size int64, f *parquetx.Footer, cols, rgs []int) (arrow.Table, error) {
	t.Helper()
	rdr, err := parquetx.OpenFile(r, size, f, nil)
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.NewGoAllocator())
	if err != nil {
		return nil, err
	}
	// pqarrow reads nothing for nil selections: spell out "all".
	if cols == nil {
		cols, _ = f.SelectColumns(nil)
	}
	if rgs == nil {
		for i := range f.RowGroups {
			rgs = append(rgs, i)
		}
	}
	return fr.ReadRowGroups(context.Background(), cols, rgs)
}

// TestRowGroupReadableFromRangesOnly is the honest check of the ranges:
// arrow-go reads each row group, whole or a column subset, through a
// reader that serves nothing but the computed ranges, and gets the same
// table as from the full file, which in turn equals the table written.
func TestRowGroupReadableFromRangesOnly(t *testing.T) {
	for _, o := range fileVariants {
		t.Run(o.String(), func(t *testing.T) {
			data, written := writeParquet(t, o)
			size := int64(len(data))
			f := mustFooter(t, data)

			whole, err := readRowGroups(t, bytes.NewReader(data), size, f, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tablesEqual(whole, written) {
				t.Fatalf("the file read back differs from the table written")
			}

			selections := [][]string{nil, {"point"}, {"tags", "id"}, {"name"}}
			for g := range f.RowGroups {
				for _, sel := range selections {
					ranges, err := parquetx.ChunkRanges(f, []int{g}, sel, 0)
					if err != nil {
						t.Fatal(err)
					}
					cols, _ := f.SelectColumns(sel)
					if sel == nil {
						cols = nil
					}
					rr := &rangeReader{data: data, allowed: append(ranges, f.FooterRange())}
					got, err := readRowGroups(t, rr, size, f, cols, []int{g})
					if err != nil {
						t.Fatalf("row group %d columns %v through the ranges %v: %v (reads outside: %v)", g, sel, ranges, err, rr.violations)
					}
					want, err := readRowGroups(t, bytes.NewReader(data), size, f, cols, []int{g})
					if err != nil {
						t.Fatal(err)
					}
					if !tablesEqual(got, want) {
						t.Fatalf("row group %d columns %v: the range-only read differs from the full read", g, sel)
					}
					if got.NumRows() != f.RowGroups[g].NumRows {
						t.Fatalf("row group %d read %d rows, footer says %d", g, got.NumRows(), f.RowGroups[g].NumRows)
					}
					if len(rr.served) == 0 {
						t.Fatalf("row group %d: arrow-go read nothing through the range reader", g)
					}
				}
			}
		})
	}
}

func tablesEqual(a, b arrow.Table) bool {
	if a.NumRows() != b.NumRows() || a.NumCols() != b.NumCols() {
		return false
	}
	for i := 0; i < int(a.NumCols()); i++ {
		if a.Schema().Field(i).Name != b.Schema().Field(i).Name {
			return false
		}
		if !array.ChunkedEqual(a.Column(i).Data(), b.Column(i).Data()) {
			return false
		}
	}
	return true
}

// TestReadFooterReadsOnlyTheTail checks ReadFooter's I/O: one read of the
// last DefaultTailSize bytes, and a second one only for larger footers.
func TestReadFooterReadsOnlyTheTail(t *testing.T) {
	data, _ := writeParquet(t, fileVariants[0])
	size := int64(len(data))
	tail := parquetx.Range{Offset: max(0, size-parquetx.DefaultTailSize), Length: min(size, parquetx.DefaultTailSize)}
	rr := &rangeReader{data: data, allowed: []parquetx.Range{tail}}
	if _, err := parquetx.ReadFooter(rr, size); err != nil {
		t.Fatalf("ReadFooter through the tail only: %v", err)
	}
	if len(rr.served) != 1 {
		t.Errorf("ReadFooter made %d reads, want 1: %v", len(rr.served), rr.served)
	}

	// A footer larger than the speculative tail: a 300-column file.
	big := widePadded(t, 300)
	f := mustFooter(t, big)
	if int64(f.MetadataLen) <= parquetx.DefaultTailSize {
		t.Skipf("footer of %d bytes is not larger than the tail; widen the test file", f.MetadataLen)
	}
	rr = &rangeReader{data: big, allowed: []parquetx.Range{{Offset: 0, Length: int64(len(big))}}}
	if _, err := parquetx.ReadFooter(rr, int64(len(big))); err != nil {
		t.Fatal(err)
	}
	if len(rr.served) != 2 {
		t.Errorf("ReadFooter of a %d-byte footer made %d reads, want 2", f.MetadataLen, len(rr.served))
	}
}

// widePadded writes a file with many columns and row groups, so its footer
// exceeds DefaultTailSize.
func widePadded(t *testing.T, ncols int) []byte {
	t.Helper()
	fields := make([]arrow.Field, ncols)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("a_rather_long_column_name_%04d", i), Type: arrow.PrimitiveTypes.Int32}
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer b.Release()
	for i := range fields {
		for r := 0; r < 8; r++ {
			b.Field(i).(*array.Int32Builder).Append(int32(r))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 2, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBadInput(t *testing.T) {
	good, _ := writeParquet(t, fileVariants[0])
	f := mustFooter(t, good)
	footerStart := f.FooterRange().Offset

	withLen := func(n uint32) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint32(b[len(b)-8:], n)
		return b
	}
	withTail := func(s string) []byte {
		b := slices.Clone(good)
		copy(b[len(b)-4:], s)
		return b
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, parquetx.ErrNotParquet},
		{"text", []byte("hello, world, this is not parquet"), parquetx.ErrNotParquet},
		{"eleven bytes", []byte("PAR1xxxPAR1"), parquetx.ErrNotParquet},
		{"csv", bytes.Repeat([]byte("a,b,c\n1,2,3\n"), 100), parquetx.ErrNotParquet},
		{"truncated by one byte", good[:len(good)-1], parquetx.ErrNotParquet},
		{"truncated to half", good[:len(good)/2], parquetx.ErrNotParquet},
		{"truncated inside the footer", good[:footerStart+10], parquetx.ErrNotParquet},
		{"footer length too large", withLen(uint32(len(good))), parquetx.ErrCorrupt},
		{"footer length zero", withLen(0), parquetx.ErrCorrupt},
		{"footer length short", withLen(uint32(f.MetadataLen - 7)), parquetx.ErrCorrupt},
		{"footer length 4 GiB", withLen(0xFFFFFFFF), parquetx.ErrCorrupt},
		{"encrypted footer", withTail("PARE"), parquetx.ErrEncrypted},
		{"footer zeroed", func() []byte {
			b := slices.Clone(good)
			clear(b[footerStart : len(b)-8])
			return b
		}(), parquetx.ErrCorrupt},
		{"header and footer of a bigger file", append(slices.Clone(good[:100]), good[footerStart:]...), parquetx.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parquetx.ReadFooter(bytes.NewReader(tc.data), int64(len(tc.data)))
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadFooter = %v, want %v", err, tc.want)
			}
			if _, err := parquetx.OpenFile(bytes.NewReader(tc.data), int64(len(tc.data)), nil, nil); err == nil {
				t.Fatalf("OpenFile accepted it")
			}
		})
	}
}

// TestFooterBitFlips damages the footer one byte at a time. Every result
// must be an error wrapping a sentinel or a footer whose ranges fit the
// file; none may panic.
func TestFooterBitFlips(t *testing.T) {
	good, _ := writeParquet(t, fileVariants[0])
	f := mustFooter(t, good)
	start := f.FooterRange().Offset
	step := 1
	if testing.Short() {
		step = 7
	}
	accepted, rejected := 0, 0
	for i := start; i < int64(len(good))-8; i += int64(step) {
		for _, mask := range []byte{0x01, 0x80, 0xFF} {
			b := slices.Clone(good)
			b[i] ^= mask
			got, err := parquetx.ReadFooter(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				if !errors.Is(err, parquetx.ErrCorrupt) && !errors.Is(err, parquetx.ErrNotParquet) &&
					!errors.Is(err, parquetx.ErrUnsupported) && !errors.Is(err, parquetx.ErrEncrypted) {
					t.Fatalf("flip at %d: error %v wraps no sentinel", i, err)
				}
				rejected++
				continue
			}
			checkInvariants(t, got)
			accepted++
		}
	}
	t.Logf("%d damaged footers rejected, %d accepted (damage in statistics or names)", rejected, accepted)
}

// checkInvariants asserts what callers rely on for any accepted footer.
func checkInvariants(t testing.TB, f *parquetx.Footer) {
	t.Helper()
	var rows int64
	for _, rg := range f.RowGroups {
		rows += rg.NumRows
		if len(rg.Columns) != len(f.Columns) {
			t.Fatalf("row group %d has %d chunks for %d columns", rg.Index, len(rg.Columns), len(f.Columns))
		}
		for _, c := range rg.Columns {
			if c.Offset < 4 || c.Length < 0 || c.Range().End() > f.Size {
				t.Fatalf("chunk %+v outside the %d-byte file", c, f.Size)
			}
			if c.Offset < rg.Offset || c.Range().End() > rg.Range().End() {
				t.Fatalf("chunk %+v outside its row group %v", c, rg.Range())
			}
		}
	}
	if rows != f.NumRows {
		t.Fatalf("row groups hold %d rows, footer %d", rows, f.NumRows)
	}
	if _, err := parquetx.ChunkRanges(f, nil, nil, 0); err != nil {
		t.Fatalf("ChunkRanges on an accepted footer: %v", err)
	}
}

func TestSniffAndNames(t *testing.T) {
	good, _ := writeParquet(t, fileVariants[3])
	cases := []struct {
		data []byte
		want bool
	}{
		{good, true},
		{[]byte("PAR1 but not at the end"), false},
		{[]byte("short"), false},
		{append([]byte("XXXX"), good[4:]...), false},
	}
	for i, tc := range cases {
		got, err := parquetx.Sniff(bytes.NewReader(tc.data), int64(len(tc.data)))
		if err != nil || got != tc.want {
			t.Errorf("case %d: Sniff = (%v, %v), want %v", i, got, err, tc.want)
		}
	}
	for name, want := range map[string]bool{
		"s3://b/t/part-0.parquet": true, "file:///x/A.PARQUET": true, "s3://b/x.parq": true,
		"s3://b/000000_0": false, "s3://b/x.parquet.crc": false, "s3://b/parquet": false,
	} {
		if got := parquetx.IsParquetName(name); got != want {
			t.Errorf("IsParquetName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestOpenFileChecksSize(t *testing.T) {
	good, _ := writeParquet(t, fileVariants[3])
	f := mustFooter(t, good)
	if _, err := parquetx.OpenFile(bytes.NewReader(good), int64(len(good))+1, f, nil); err == nil {
		t.Fatal("OpenFile accepted a footer of another size")
	}
}
