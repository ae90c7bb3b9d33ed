package parquetx_test

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/locuscache/locus/pkg/parquetx"
)

// BenchmarkFooter compares parquetx's footer path with arrow-go's own on
// the same file (4 row groups x 7 columns):
//
//	arrow-go-open      baseline: file.NewParquetReader parses the footer
//	arrow-go-metadata  baseline: metadata.NewFileMetaData on the raw bytes
//	parquetx-read      ReadFooter: tail read, Thrift pre-check, parse, ranges
//	parquetx-parse     ParseFooter on a tail already in memory
//	cache-hit          FooterCache.Get of a parsed footer
func BenchmarkFooter(b *testing.B) {
	data, _ := writeParquet(b, fileVariants[0])
	size := int64(len(data))
	f := mustFooter(b, data)
	fr := f.FooterRange()
	raw := data[fr.Offset : fr.End()-8]
	tail := data[fr.Offset:]
	b.Run("arrow-go-open", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(f.MetadataLen))
		for b.Loop() {
			if _, err := file.NewParquetReader(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("arrow-go-metadata", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(f.MetadataLen))
		for b.Loop() {
			if _, err := metadata.NewFileMetaData(raw, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parquetx-read", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(f.MetadataLen))
		for b.Loop() {
			if _, err := parquetx.ReadFooter(bytes.NewReader(data), size); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parquetx-parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(f.MetadataLen))
		for b.Loop() {
			if _, err := parquetx.ParseFooter(tail, size); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache-hit", func(b *testing.B) {
		c, _ := parquetx.NewFooterCache(parquetx.FooterCacheConfig{})
		k := parquetx.FooterKey{URI: "s3://b/k", Version: "v"}
		c.Add(k, f)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := c.Get(k); !ok {
				b.Fatal("miss")
			}
		}
	})
}

// BenchmarkChunkRanges: ranges for 3 of 7 columns of every row group.
func BenchmarkChunkRanges(b *testing.B) {
	data, _ := writeParquet(b, fileVariants[0])
	f := mustFooter(b, data)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parquetx.ChunkRanges(f, nil, []string{"id", "point", "flag"}, 0); err != nil {
			b.Fatal(err)
		}
	}
}
