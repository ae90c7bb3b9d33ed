package localcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// DatasetSpec describes the synthetic Parquet table WriteDataset writes:
// RowGroups row groups in all, PerFile per file (the last file may hold
// fewer), Rows rows spread as evenly as whole rows allow, Snappy
// compressed, deterministic for a Seed.
type DatasetSpec struct {
	RowGroups int   // default 24
	PerFile   int   // default 4
	Rows      int64 // default 100,000 (about 7 MB)
	Seed      uint64
}

// Defaults of DatasetSpec.
const (
	DefaultRowGroups = 24
	DefaultPerFile   = 4
	DefaultRows      = 100_000
)

// ErrInvalidDataset: a DatasetSpec that cannot be written (fewer rows than
// row groups, a negative count).
var ErrInvalidDataset = errors.New("localcluster: invalid dataset spec")

func (s *DatasetSpec) validate() error {
	if s.RowGroups == 0 {
		s.RowGroups = DefaultRowGroups
	}
	if s.PerFile == 0 {
		s.PerFile = DefaultPerFile
	}
	if s.Rows == 0 {
		s.Rows = DefaultRows
	}
	switch {
	case s.RowGroups < 0 || s.PerFile < 0 || s.Rows < 0:
		return fmt.Errorf("%w: negative count (row groups %d, per file %d, rows %d)", ErrInvalidDataset, s.RowGroups, s.PerFile, s.Rows)
	case s.Rows < int64(s.RowGroups):
		return fmt.Errorf("%w: %d rows cannot fill %d row groups", ErrInvalidDataset, s.Rows, s.RowGroups)
	case s.RowGroups > 100_000:
		return fmt.Errorf("%w: %d row groups is more than a local cluster needs (at most 100000)", ErrInvalidDataset, s.RowGroups)
	}
	return nil
}

// Dataset is what WriteDataset wrote.
type Dataset struct {
	Dir   string   // the directory holding the files
	Files []string // absolute paths, in order
	Rows  int64
	// IDSum is the sum of the id column (ids are 0..Rows-1), a checksum a
	// reader can compare against what it decoded.
	IDSum int64
	Bytes int64 // total file size
}

// Schema is the table's schema: an id, a user, an event kind, a score, a
// timestamp and a free-text payload (the bulk of the bytes).
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user", Type: arrow.BinaryTypes.String},
	{Name: "kind", Type: arrow.BinaryTypes.String},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "payload", Type: arrow.BinaryTypes.String},
}, nil)

var kinds = []string{"view", "click", "add_to_cart", "purchase", "search"}

// WriteDataset writes the table spec describes into dir as
// part-00000.parquet, part-00001.parquet, ... with arrow-go (pqarrow), about
// spec.Rows/spec.RowGroups rows per row group. Existing files of those
// names are replaced. When ctx ends it stops within a slice of a row group
// and returns ctx's error, leaving the file it was writing unwritten.
func WriteDataset(ctx context.Context, dir string, spec DatasetSpec) (Dataset, error) {
	if err := spec.validate(); err != nil {
		return Dataset{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Dataset{}, fmt.Errorf("localcluster: cannot create %s: %w", dir, err)
	}
	ds := Dataset{Dir: dir, Rows: spec.Rows}
	groups := int64(spec.RowGroups)
	rng := rand.New(rand.NewPCG(spec.Seed, 0x10c05))
	var id int64
	for f := 0; f*spec.PerFile < spec.RowGroups; f++ {
		path := filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", f))
		// Row group g (over the whole table) holds rows [g*Rows/groups, (g+1)*Rows/groups).
		var sizes []int64
		for g := int64(f * spec.PerFile); g < int64(min((f+1)*spec.PerFile, spec.RowGroups)); g++ {
			sizes = append(sizes, (g+1)*spec.Rows/groups-g*spec.Rows/groups)
		}
		n, err := writeFile(ctx, path, rng, &id, sizes)
		if err != nil {
			return Dataset{}, err
		}
		ds.Files = append(ds.Files, path)
		ds.Bytes += n
	}
	ds.IDSum = spec.Rows * (spec.Rows - 1) / 2
	return ds, nil
}

// writeFile writes one file whose row groups hold sizes[i] rows, ids from
// *id on, and returns its size.
func writeFile(ctx context.Context, path string, rng *rand.Rand, id *int64, sizes []int64) (int64, error) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("localcluster: %w", err)
	}
	defer os.Remove(tmp) // after the rename, a no-op
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(1<<40), // row groups end where we say
		parquet.WithCreatedBy("locusctl up"),
	)
	w, err := pqarrow.NewFileWriter(Schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("localcluster: %s: %w", path, err)
	}
	for _, n := range sizes {
		if err := ctx.Err(); err != nil {
			w.Close()
			return 0, err
		}
		rec := batch(ctx, rng, *id, n)
		if err := ctx.Err(); err != nil {
			rec.Release()
			w.Close()
			return 0, err
		}
		*id += n
		w.NewBufferedRowGroup()
		err := w.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			w.Close()
			return 0, fmt.Errorf("localcluster: writing %s: %w", path, err)
		}
	}
	if err := w.Close(); err != nil { // closes f too
		return 0, fmt.Errorf("localcluster: writing %s: %w", path, err)
	}
	st, err := os.Stat(tmp)
	if err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("localcluster: %w", err)
	}
	return st.Size(), nil
}

// batch builds n rows with ids from first on; when ctx ends it stops
// early (the caller then drops the batch).
func batch(ctx context.Context, rng *rand.Rand, first, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, Schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	users := b.Field(1).(*array.StringBuilder)
	kindsB := b.Field(2).(*array.StringBuilder)
	scores := b.Field(3).(*array.Float64Builder)
	ts := b.Field(4).(*array.TimestampBuilder)
	payloads := b.Field(5).(*array.StringBuilder)
	const t0 = 1_767_225_600_000 // 2026-01-01T00:00:00Z in ms
	var buf []byte
	for i := range n {
		if i&(1<<16-1) == 0 && ctx.Err() != nil {
			break
		}
		id := first + i
		ids.Append(id)
		users.Append("user-" + strconv.Itoa(rng.IntN(5000)))
		kindsB.Append(kinds[rng.IntN(len(kinds))])
		if rng.IntN(10) == 0 {
			scores.AppendNull()
		} else {
			scores.Append(rng.Float64() * 100)
		}
		ts.Append(arrow.Timestamp(t0 + id*250 + int64(rng.IntN(250))))
		buf = buf[:0]
		for range 3 {
			buf = strconv.AppendUint(buf, rng.Uint64(), 36)
		}
		payloads.BinaryBuilder.Append(buf)
	}
	return b.NewRecordBatch()
}
