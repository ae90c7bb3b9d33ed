package parquetx

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/locuscache/locus/pkg/origin"
)

// Split is one unit of work for a query engine task: one row group of one
// object. URI, Offset and Length are what the scheduler's /v1/place takes.
type Split struct {
	URI      string `json:"uri"`
	Version  string `json:"version,omitempty"` // the version the plan was made from
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
	RowGroup int    `json:"row_group"`
	NumRows  int64  `json:"num_rows"`
}

// PlanSplits returns one split per row group of a file, in file order.
// Row groups with no rows and no bytes are left out.
func PlanSplits(info origin.Info, f *Footer) []Split {
	out := make([]Split, 0, len(f.RowGroups))
	for _, rg := range f.RowGroups {
		if rg.NumRows == 0 && rg.Length == 0 {
			continue
		}
		out = append(out, Split{
			URI: info.URI, Version: info.Version,
			Offset: rg.Offset, Length: rg.Length,
			RowGroup: rg.Index, NumRows: rg.NumRows,
		})
	}
	return out
}

// ListOptions controls ListParquet.
type ListOptions struct {
	// Sniff also accepts objects without a Parquet extension whose first
	// and last four bytes are the Parquet magic (Hive writes files named
	// like 000000_0). It costs two 4-byte reads per such object.
	Sniff bool
}

// ListParquet calls fn for each Parquet object under prefix (s3:// or
// file://, any origin.Store). Hidden objects are skipped: any path
// component below the prefix starting with "_" or "." (_SUCCESS,
// _temporary/, .crc files), as Hadoop-family writers expect. Objects are
// recognised by extension (IsParquetName) and, with opts.Sniff, by magic.
func ListParquet(ctx context.Context, store origin.Store, prefix string, opts ListOptions, fn func(origin.Info) error) error {
	return store.List(ctx, prefix, func(info origin.Info) error {
		if hidden(prefix, info.URI) {
			return nil
		}
		if !IsParquetName(info.URI) {
			if !opts.Sniff {
				return nil
			}
			ok, err := Sniff(origin.NewReaderAt(ctx, store, info), info.Size)
			if err != nil {
				if errors.Is(err, origin.ErrNotFound) || errors.Is(err, origin.ErrVersionChanged) {
					return nil // vanished or changed since listed: not ours to plan
				}
				return fmt.Errorf("parquetx: sniffing %s: %w", info.URI, err)
			}
			if !ok {
				return nil
			}
		}
		return fn(info)
	})
}

// hidden reports whether a path component of uri below the prefix starts
// with "_" or ".". A component the prefix names in part (prefix
// ".../_stag" and uri ".../_staging/a.parquet") is the operator's choice,
// not hidden.
func hidden(prefix, uri string) bool {
	rest, ok := strings.CutPrefix(uri, prefix)
	parts := strings.Split(rest, "/") // not under the prefix (another spelling): every component
	if ok && !strings.HasSuffix(prefix, "/") {
		parts = parts[1:] // the rest of the component the prefix ends in
	}
	for _, part := range parts {
		if strings.HasPrefix(part, "_") || strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// PlanOptions controls Plan.
type PlanOptions struct {
	ListOptions
	// Cache, if set, is consulted and filled with the footers read.
	Cache *FooterCache
	// Concurrency bounds parallel footer reads. Default 8.
	Concurrency int
}

// Plan lists the Parquet objects under prefix, reads their footers, and
// returns one split per row group, ordered by listing order then row
// group. A file whose footer is corrupt or not Parquet fails the plan with
// an error naming the file.
func Plan(ctx context.Context, store origin.Store, prefix string, opts PlanOptions) ([]Split, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	var infos []origin.Info
	if err := ListParquet(ctx, store, prefix, opts.ListOptions, func(info origin.Info) error {
		infos = append(infos, info)
		return nil
	}); err != nil {
		return nil, err
	}
	per := make([][]Split, len(infos))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	// Each goroutine writes only its own per[i].
	for i, info := range infos {
		g.Go(func() error {
			var f *Footer
			var err error
			if opts.Cache != nil {
				f, err = opts.Cache.Load(gctx, store, info)
			} else {
				f, err = ReadObjectFooter(gctx, store, info)
			}
			if err != nil {
				return err
			}
			per[i] = PlanSplits(info, f)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []Split
	for _, s := range per {
		out = append(out, s...)
	}
	return out, nil
}
