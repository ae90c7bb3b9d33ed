package parquetx_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/parquetx"
)

// exampleFile writes 300 rows of (id int64, point struct{x, y int32}) in
// row groups of 100.
func exampleFile() []byte {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "point", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32},
			arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int32})},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer b.Release()
	pt := b.Field(1).(*array.StructBuilder)
	for i := 0; i < 300; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		pt.Append(true)
		pt.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
		pt.FieldBuilder(1).(*array.Int32Builder).Append(int32(-i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false))
	if err := pqarrow.WriteTable(tbl, &buf, 100, props, pqarrow.DefaultWriterProps()); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func ExampleReadFooter() {
	data := exampleFile()
	f, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		panic(err)
	}
	fmt.Println(f.NumRows, "rows,", len(f.RowGroups), "row groups, columns", f.Columns)
	rg := f.RowGroups[1]
	fmt.Println("row group 1:", rg.NumRows, "rows, chunks of", rg.Columns[0].Path, rg.Columns[1].Path, rg.Columns[2].Path)

	// What to prefetch for a task reading point.* of row group 1: the two
	// adjacent chunks merge into one range.
	ranges, _ := parquetx.ChunkRanges(f, []int{1}, []string{"point"}, 0)
	fmt.Println(len(ranges), "range,", ranges[0] == parquetx.Range{Offset: rg.Columns[1].Offset, Length: rg.Columns[2].Range().End() - rg.Columns[1].Offset})
	// Output:
	// 300 rows, 3 row groups, columns [id point.x point.y]
	// row group 1: 100 rows, chunks of id point.x point.y
	// 1 range, true
}

func ExamplePlan() {
	store := origintest.NewMemStore() // any origin.Store: S3, files, the router
	store.Put("s3://lake/events/part-0.parquet", exampleFile())
	store.Put("s3://lake/events/_SUCCESS", nil)

	splits, err := parquetx.Plan(context.Background(), store, "s3://lake/events/", parquetx.PlanOptions{})
	if err != nil {
		panic(err)
	}
	for _, s := range splits {
		fmt.Println(s.URI, "row group", s.RowGroup, s.NumRows, "rows", s.Length > 0)
	}
	// Output:
	// s3://lake/events/part-0.parquet row group 0 100 rows true
	// s3://lake/events/part-0.parquet row group 1 100 rows true
	// s3://lake/events/part-0.parquet row group 2 100 rows true
}

// Reading a Parquet object with arrow-go through an origin (or any
// io.ReaderAt), reusing a cached footer.
func ExampleOpenFile() {
	store := origintest.NewMemStore()
	info := store.Put("s3://lake/t.parquet", exampleFile())
	ctx := context.Background()

	cache, _ := parquetx.NewFooterCache(parquetx.FooterCacheConfig{})
	footer, _ := cache.Load(ctx, store, info)
	rdr, err := parquetx.OpenFile(origin.NewReaderAt(ctx, store, info), info.Size, footer, nil)
	if err != nil {
		panic(err)
	}
	fr, _ := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.NewGoAllocator())
	tbl, _ := fr.ReadRowGroups(ctx, []int{0}, []int{2}) // column "id" of row group 2
	defer tbl.Release()
	fmt.Println(tbl.NumRows(), tbl.Schema().Field(0).Name)
	// Output: 100 id
}
