package parquetx

import (
	"fmt"
	"slices"
	"strings"
)

// MergeRanges sorts ranges and merges those that overlap, touch, or lie
// within gap bytes of each other (gap > 0 trades a few unneeded bytes for
// fewer requests). Empty ranges are dropped. The input is not modified.
func MergeRanges(ranges []Range, gap int64) []Range {
	rs := make([]Range, 0, len(ranges))
	for _, r := range ranges {
		if r.Length > 0 {
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b Range) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Offset-out[n-1].End() <= gap {
			if e := r.End(); e > out[n-1].End() {
				out[n-1].Length = e - out[n-1].Offset
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// SelectColumns returns the leaf column indexes a selection names. A
// selector matches a leaf whose dotted path equals it or starts with it
// followed by ".", so "point" selects "point.x" and "point.y", and "tags"
// selects "tags.list.element". A nil or empty selection selects every
// column. A selector matching nothing is an error wrapping ErrNoSuchColumn.
func (f *Footer) SelectColumns(columns []string) ([]int, error) {
	if len(columns) == 0 {
		all := make([]int, len(f.Columns))
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	picked := make([]bool, len(f.Columns))
	for _, sel := range columns {
		found := false
		for i, path := range f.Columns {
			if path == sel || strings.HasPrefix(path, sel+".") {
				picked[i] = true
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %q (the file has %s)", ErrNoSuchColumn, sel, strings.Join(f.Columns, ", "))
		}
	}
	var idx []int
	for i, p := range picked {
		if p {
			idx = append(idx, i)
		}
	}
	return idx, nil
}

// ChunkRanges returns the byte ranges holding the chosen columns of the
// chosen row groups, sorted and merged with MergeRanges(…, gap): what to
// prefetch into the page cache before a task reads those columns. Nil
// rowGroups means every row group; nil columns every column (see
// SelectColumns). Errors wrap ErrNoSuchRowGroup or ErrNoSuchColumn.
func ChunkRanges(f *Footer, rowGroups []int, columns []string, gap int64) ([]Range, error) {
	cols, err := f.SelectColumns(columns)
	if err != nil {
		return nil, err
	}
	if rowGroups == nil {
		rowGroups = make([]int, len(f.RowGroups))
		for i := range rowGroups {
			rowGroups[i] = i
		}
	}
	var rs []Range
	for _, g := range rowGroups {
		if g < 0 || g >= len(f.RowGroups) {
			return nil, fmt.Errorf("%w: %d (the file has %d)", ErrNoSuchRowGroup, g, len(f.RowGroups))
		}
		for _, c := range cols {
			rs = append(rs, f.RowGroups[g].Columns[c].Range())
		}
	}
	return MergeRanges(rs, gap), nil
}
