package cache_test

import (
	"context"
	"fmt"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

func Example() {
	origin := cachetest.NewOrigin()
	obj := origin.Put("s3://bucket/table/part-0.parquet", "etag-1", []byte("hello, page cache"))

	c, err := cache.New(cache.Config{
		Origin:      origin,
		MemoryBytes: 64 << 10, // RAM-only: no Dir
		PageSize:    4096,
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	buf := make([]byte, 5)
	for i := 0; i < 2; i++ {
		res, err := c.Get(context.Background(), obj, 7, 5, buf)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s hit=%d miss=%d cold=%d\n", buf[:res.Bytes], res.HitBytes, res.MissBytes, res.Misses[cache.MissCold].Pages)
	}
	// Output:
	// page  hit=0 miss=5 cold=1
	// page  hit=5 miss=0 cold=0
}

func ExampleCache_View() {
	origin := cachetest.NewOrigin()
	obj := origin.Put("s3://bucket/k", "v1", []byte("0123456789"))
	c, err := cache.New(cache.Config{Origin: origin, MemoryBytes: 1 << 20, PageSize: 4096})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// A range past the end is truncated.
	res, err := c.View(context.Background(), obj, 6, 100, func(p []byte) error {
		fmt.Printf("%q\n", p) // valid only during the call
		return nil
	})
	fmt.Println(res.Bytes, err)
	// Output:
	// "6789"
	// 4 <nil>
}
