package origin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// A file origin confined to one directory, read through a stat cache.
func Example() {
	root, _ := os.MkdirTemp("", "origin-example")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "part-0.parquet"), []byte("hello, origin"), 0o644)

	files, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		panic(err)
	}
	defer files.Close()
	router, _ := origin.NewRouter(map[string]origin.Store{"file": files})
	store, _ := origin.NewStatCache(router, origin.StatCacheConfig{TTL: 5 * time.Second})

	ctx := context.Background()
	uri := "file://" + root + "/part-0.parquet"
	info, _ := store.Stat(ctx, uri)
	p := make([]byte, 6)
	n, _ := store.ReadAt(ctx, info.URI, info.Version, p, 7)
	fmt.Printf("%d bytes, read %q\n", info.Size, p[:n])

	_, err = store.Stat(ctx, "file:///etc/passwd")
	fmt.Println(errors.Is(err, origin.ErrOutsideRoot))
	_, err = store.Stat(ctx, "s3://bucket/key")
	fmt.Println(errors.Is(err, origin.ErrUnsupportedScheme))
	// Output:
	// 13 bytes, read "origin"
	// true
	// true
}

func ExampleParseURI() {
	u, _ := origin.ParseURI("file://localhost/data/lake/a%20b.parquet")
	fmt.Println(u.Path, u.String())
	u, _ = origin.ParseURI("s3://lake/tbl/part-0.parquet")
	fmt.Println(u.Bucket, u.Key)
	_, err := origin.ParseURI("file:///data/%2e%2e/etc/passwd")
	fmt.Println(errors.Is(err, origin.ErrOutsideRoot))
	// Output:
	// /data/lake/a b.parquet file:///data/lake/a%20b.parquet
	// lake tbl/part-0.parquet
	// true
}

// Reading a version that has since changed fails instead of mixing bytes.
func ExampleStore_versionChanged() {
	root, _ := os.MkdirTemp("", "origin-example")
	defer os.RemoveAll(root)
	path := filepath.Join(root, "t.bin")
	os.WriteFile(path, []byte("old"), 0o644)
	files, _ := origin.NewFileStore(origin.FileConfig{Root: root})
	defer files.Close()

	ctx := context.Background()
	info, _ := files.Stat(ctx, "file://"+path)
	os.WriteFile(path, []byte("new!"), 0o644)

	_, err := files.ReadAt(ctx, info.URI, info.Version, make([]byte, 3), 0)
	fmt.Println(errors.Is(err, origin.ErrVersionChanged))
	// Output: true
}
