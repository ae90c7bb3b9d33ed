package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/origin"
)

// An executor reads its split through the node the scheduler placed it
// on, falling back to S3 if that node fails.
func Example() {
	ctx := context.Background()
	s3, err := origin.NewS3Store(ctx, origin.S3Config{Region: "us-east-1"})
	if err != nil {
		panic(err)
	}
	c, err := client.New(client.Config{Origin: s3})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	split := client.Split{URI: "s3://lake/t/part-0.parquet", Offset: 4, Length: 64 << 20}
	sum, err := c.ReadSplit(ctx, "10.0.0.7:7070", split, os.Stdout)
	if err != nil {
		panic(err)
	}
	fmt.Println(sum.LocalHitBytes, sum.PeerHitBytes, sum.OriginBytes)
}

// arrow-go's Parquet reader reads through a node with a ReaderAt.
func ExampleClient_Open() {
	ctx := context.Background()
	c, _ := client.New(client.Config{})
	defer c.Close()
	r, err := c.Open(ctx, "127.0.0.1:7070", "s3://lake/t/part-0.parquet")
	if err != nil {
		panic(err)
	}
	pf, err := file.NewParquetReader(r)
	if err != nil {
		panic(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true}, memory.DefaultAllocator)
	if err != nil {
		panic(err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		panic(err)
	}
	defer tbl.Release()
	sum := r.Summary()
	fmt.Println(tbl.NumRows(), sum.Bytes, sum.LocalHitBytes+sum.PeerHitBytes)
}
