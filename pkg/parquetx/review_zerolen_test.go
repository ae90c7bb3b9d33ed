// Regression tests for bugs a review found (2026-12-01): each test's
// comment describes the bug as it was before the fix.
package parquetx_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
)

// TestRowsWithoutBytes: a footer whose row group claims rows (and
// values in every column chunk) but whose chunks all have
// total_compressed_size 0 cannot be real (a chunk holding values has at
// least a page header). ReadFooter accepts it, and PlanSplits hands out a
// split of 7 rows and Length 0: a split the scheduler rejects (/v1/place
// needs length > 0, ring.PlacementBlock fails with "bad length"), which
// makes `locusctl plan` abort the whole prefix on it (exit 1, earlier
// rows lost unflushed in the tabwriter) instead of skipping the corrupt
// file with a warning as it does for other corrupt footers. Expected:
// ErrCorrupt from ReadFooter, or at least no split with rows and no bytes.
func TestRowsWithoutBytes(t *testing.T) {
	const ncols = 7
	data := buildFooterFile(t, 4+ncols*10, []int{5, 7},
		[][][2]int64{chunksAt(ncols, 4, 10), chunksAt(ncols, 4+ncols*10, 0)})
	f, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
	if errors.Is(err, parquetx.ErrCorrupt) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range parquetx.PlanSplits(origin.Info{URI: "s3://bkt/t.parquet", Size: int64(len(data))}, f) {
		if s.Length <= 0 {
			t.Fatalf("ReadFooter accepted the footer and PlanSplits returned split %+v: %d rows in %d bytes", s, s.NumRows, s.Length)
		}
	}
}
