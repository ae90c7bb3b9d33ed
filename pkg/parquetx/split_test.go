package parquetx_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/origin/origintest"
	"github.com/locuscache/locus/pkg/parquetx"
)

func TestPlanSplits(t *testing.T) {
	data, _ := writeParquet(t, fileVariants[0])
	f := mustFooter(t, data)
	info := origin.Info{URI: "s3://b/t.parquet", Version: `"e"`, Size: int64(len(data))}
	splits := parquetx.PlanSplits(info, f)
	if len(splits) != 4 {
		t.Fatalf("%d splits, want one per row group (4)", len(splits))
	}
	var rows int64
	for i, s := range splits {
		rg := f.RowGroups[i]
		want := parquetx.Split{URI: info.URI, Version: info.Version, Offset: rg.Offset, Length: rg.Length, RowGroup: i, NumRows: rg.NumRows}
		if s != want {
			t.Errorf("split %d = %+v, want %+v", i, s, want)
		}
		rows += s.NumRows
	}
	if rows != 3500 {
		t.Errorf("splits cover %d rows, want 3500", rows)
	}
}

// layout writes a small table directory the way Spark and Hive leave it.
func layout(t *testing.T, put func(rel string, data []byte)) {
	t.Helper()
	a, _ := writeParquet(t, fileVariants[0]) // 4 row groups
	b, _ := writeParquet(t, fileVariants[3]) // 1 row group
	put("tbl/part-0.parquet", a)
	put("tbl/sub/part-1.snappy.parquet", b)
	put("tbl/000000_0", b) // Hive: no extension
	put("tbl/_SUCCESS", nil)
	put("tbl/.part-0.parquet.crc", []byte("crc"))
	put("tbl/_temporary/0/part-9.parquet", a)
	put("tbl/notes.txt", []byte("not parquet at all"))
	put("other/x.parquet", b)
}

func planURIs(splits []parquetx.Split) map[string]int {
	m := map[string]int{}
	for _, s := range splits {
		m[s.URI]++
	}
	return m
}

func checkPlan(t *testing.T, store origin.Store, prefix string) {
	t.Helper()
	ctx := context.Background()
	var listed []string
	if err := parquetx.ListParquet(ctx, store, prefix+"tbl/", parquetx.ListOptions{}, func(i origin.Info) error {
		listed = append(listed, i.URI)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	want := []string{prefix + "tbl/part-0.parquet", prefix + "tbl/sub/part-1.snappy.parquet"}
	if !slices.Equal(listed, want) {
		t.Fatalf("ListParquet = %v, want %v", listed, want)
	}

	cache, _ := parquetx.NewFooterCache(parquetx.FooterCacheConfig{})
	splits, err := parquetx.Plan(ctx, store, prefix+"tbl/", parquetx.PlanOptions{ListOptions: parquetx.ListOptions{Sniff: true}, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	got := planURIs(splits)
	wantSplits := map[string]int{prefix + "tbl/part-0.parquet": 4, prefix + "tbl/sub/part-1.snappy.parquet": 1, prefix + "tbl/000000_0": 1}
	if len(got) != len(wantSplits) {
		t.Fatalf("Plan = %v, want %v", got, wantSplits)
	}
	for k, v := range wantSplits {
		if got[k] != v {
			t.Fatalf("Plan = %v, want %v", got, wantSplits)
		}
	}
	if s := cache.Stats(); s.Entries != 3 {
		t.Errorf("footer cache holds %d footers after planning, want 3", s.Entries)
	}
	// Each split's bytes, read through the store, are the row group that
	// arrow-go reads back from the object.
	for _, s := range splits[:2] {
		info, err := store.Stat(ctx, s.URI)
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := parquetx.OpenFile(origin.NewReaderAt(ctx, store, info), info.Size, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.NewGoAllocator())
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadRowGroups(ctx, []int{0, 1, 2, 3, 4, 5, 6}, []int{s.RowGroup})
		if err != nil {
			t.Fatalf("reading %s row group %d through the origin ReaderAt: %v", s.URI, s.RowGroup, err)
		}
		if tbl.NumRows() != s.NumRows {
			t.Errorf("%s row group %d: read %d rows, split says %d", s.URI, s.RowGroup, tbl.NumRows(), s.NumRows)
		}
	}
	// A prefix is a string prefix: other/ plans only its own file.
	other, err := parquetx.Plan(ctx, store, prefix+"other/", parquetx.PlanOptions{})
	if err != nil || len(other) != 1 || other[0].URI != prefix+"other/x.parquet" {
		t.Fatalf("Plan(other/) = (%v, %v), want the one split of other/x.parquet", other, err)
	}
}

func TestPlanFileStore(t *testing.T) {
	root := t.TempDir()
	layout(t, func(rel string, data []byte) { writeUnder(t, root, rel, data) })
	fs := fileStore(t, root)
	checkPlan(t, fs, "file://"+root+"/")

	// A corrupt file with a Parquet name fails the plan with its name.
	if err := os.WriteFile(filepath.Join(root, "other", "bad.parquet"), []byte("PAR1 truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := parquetx.Plan(context.Background(), fs, "file://"+root+"/other/", parquetx.PlanOptions{})
	if !errors.Is(err, parquetx.ErrNotParquet) || !strings.Contains(err.Error(), "bad.parquet") {
		t.Fatalf("Plan with a corrupt file = %v, want ErrNotParquet naming bad.parquet", err)
	}
}

func TestPlanMemStoreS3URIs(t *testing.T) {
	mem := origintest.NewMemStore()
	layout(t, func(rel string, data []byte) { mem.Put("s3://lake/"+rel, data) })
	checkPlan(t, mem, "s3://lake/")
}

func TestPlanS3Integration(t *testing.T) {
	g := origintest.StartVersityGW(t)
	layout(t, func(rel string, data []byte) { g.Put(t, rel, data) })
	checkPlan(t, g.Store(t), "s3://"+g.Bucket+"/")
}

// writeUnder writes data to root/rel, making its directories.
func writeUnder(t *testing.T, root, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fileStore opens a file store on root, closed when the test ends.
func fileStore(t *testing.T, root string) *origin.FileStore {
	t.Helper()
	fs, err := origin.NewFileStore(origin.FileConfig{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}
