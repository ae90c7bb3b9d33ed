package parquetx_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeOpts describes one test file.
type writeOpts struct {
	rows, rowsPerGroup int
	dict               bool
	codec              compress.Compression
	pageIndex          bool
}

func (o writeOpts) String() string {
	return fmt.Sprintf("rows=%d/rg=%d/dict=%v/%s/pageindex=%v", o.rows, o.rowsPerGroup, o.dict, o.codec, o.pageIndex)
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}, // low cardinality: dictionary-friendly
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "point", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	), Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

// testTable builds a deterministic table of n rows.
func testTable(t testing.TB, n int) arrow.Table {
	t.Helper()
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	names := b.Field(1).(*array.StringBuilder)
	scores := b.Field(2).(*array.Float64Builder)
	tags := b.Field(3).(*array.ListBuilder)
	tagVals := tags.ValueBuilder().(*array.StringBuilder)
	point := b.Field(4).(*array.StructBuilder)
	px := point.FieldBuilder(0).(*array.Int32Builder)
	py := point.FieldBuilder(1).(*array.Int32Builder)
	flags := b.Field(5).(*array.BooleanBuilder)
	for i := 0; i < n; i++ {
		ids.Append(int64(i) * 7919)
		if i%11 == 0 {
			names.AppendNull()
		} else {
			names.Append(fmt.Sprintf("name-%d", i%13))
		}
		if i%5 == 0 {
			scores.AppendNull()
		} else {
			scores.Append(float64(i) / 3)
		}
		if i%7 == 0 {
			tags.AppendNull()
		} else {
			tags.Append(true)
			for j := 0; j < i%4; j++ {
				tagVals.Append(fmt.Sprintf("t%d", (i+j)%9))
			}
		}
		if i%9 == 0 {
			point.AppendNull()
		} else {
			point.Append(true)
			px.Append(int32(i))
			if i%2 == 0 {
				py.AppendNull()
			} else {
				py.Append(int32(-i))
			}
		}
		flags.Append(i%3 == 0)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(testSchema, []arrow.RecordBatch{rec})
}

// writeParquet writes a test table with pqarrow.WriteTable.
func writeParquet(t testing.TB, o writeOpts) ([]byte, arrow.Table) {
	t.Helper()
	tbl := testTable(t, o.rows)
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(
		parquet.WithDictionaryDefault(o.dict),
		parquet.WithCompression(o.codec),
		parquet.WithDataPageSize(4<<10), // several pages per chunk
		parquet.WithPageIndexEnabled(o.pageIndex),
		parquet.WithStats(true),
	)
	if err := pqarrow.WriteTable(tbl, &buf, int64(o.rowsPerGroup), props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatalf("WriteTable(%s): %v", o, err)
	}
	return buf.Bytes(), tbl
}

var fileVariants = []writeOpts{
	{rows: 3500, rowsPerGroup: 1000, dict: true, codec: compress.Codecs.Snappy},
	{rows: 3500, rowsPerGroup: 1000, dict: false, codec: compress.Codecs.Uncompressed},
	{rows: 2000, rowsPerGroup: 700, dict: true, codec: compress.Codecs.Zstd, pageIndex: true},
	{rows: 10, rowsPerGroup: 100, dict: false, codec: compress.Codecs.Gzip},
}
