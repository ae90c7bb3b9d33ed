package origin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

func TestRouter(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("file"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	mem := origintest.NewMemStore()
	mem.Put("s3://bucket/k", []byte("s3 object"))
	r, err := origin.NewRouter(map[string]origin.Store{"s3": mem, "file": fs})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		uri      string
		wantSize int64
		wantErr  error
	}{
		{"s3://bucket/k", 9, nil},
		{"file://" + root + "/f", 4, nil},
		{"gs://bucket/k", 0, origin.ErrUnsupportedScheme},
		{"hdfs://nn/x", 0, origin.ErrUnsupportedScheme},
		{"no-scheme", 0, origin.ErrInvalidURI},
	}
	for _, tc := range cases {
		info, err := r.Stat(ctx, tc.uri)
		if !errors.Is(err, tc.wantErr) || info.Size != tc.wantSize {
			t.Errorf("Stat(%s) = (%+v, %v), want size %d, err %v", tc.uri, info, err, tc.wantSize, tc.wantErr)
		}
		if _, err := r.ReadAt(ctx, tc.uri, "", make([]byte, 1), 0); !errors.Is(err, tc.wantErr) {
			t.Errorf("ReadAt(%s) err = %v, want %v", tc.uri, err, tc.wantErr)
		}
		err = r.List(ctx, tc.uri, func(origin.Info) error { return nil })
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("List(%s) err = %v, want %v", tc.uri, err, tc.wantErr)
		}
	}

	// A node without a file root serves no file:// URI.
	var noFiles *origin.FileStore
	r2, err := origin.NewRouter(map[string]origin.Store{"s3": mem, "file": noFiles})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Stat(ctx, "file://"+root+"/f"); !errors.Is(err, origin.ErrUnsupportedScheme) {
		t.Errorf("router without file store: %v, want ErrUnsupportedScheme", err)
	}
	if got := r2.Schemes(); len(got) != 1 || got[0] != "s3" {
		t.Errorf("Schemes() = %v", got)
	}
	if _, err := origin.NewRouter(nil); err == nil {
		t.Error("empty router accepted")
	}
	if _, err := origin.NewRouter(map[string]origin.Store{"S3": mem}); err == nil {
		t.Error("upper-case scheme accepted")
	}
}

func TestAllIterator(t *testing.T) {
	mem := origintest.NewMemStore()
	for _, u := range []string{"s3://b/1", "s3://b/2", "s3://b/3"} {
		mem.Put(u, []byte("x"))
	}
	var got []string
	for info, err := range origin.All(context.Background(), mem, "s3://b/") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, info.URI)
		if len(got) == 2 {
			break
		}
	}
	if len(got) != 2 {
		t.Fatalf("got %v", got)
	}
	mem.Hook = func(op, uri string) error { return origin.ErrUnavailable }
	n := 0
	for _, err := range origin.All(context.Background(), mem, "s3://b/") {
		n++
		if !errors.Is(err, origin.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("listing error yielded %d times, want 1", n)
	}
}
