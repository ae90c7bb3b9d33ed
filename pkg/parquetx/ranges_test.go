package parquetx_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/locuscache/locus/pkg/parquetx"
)

// bruteMerge is the reference: mark covered bytes in a bitmap, bridge gaps
// of at most gap bytes between covered runs, and read the runs back.
func bruteMerge(rs []parquetx.Range, gap int64, universe int) []parquetx.Range {
	covered := make([]bool, universe)
	for _, r := range rs {
		for i := r.Offset; i < r.End(); i++ {
			covered[i] = true
		}
	}
	var runs []parquetx.Range
	for i := 0; i < universe; {
		if !covered[i] {
			i++
			continue
		}
		j := i
		for j < universe && covered[j] {
			j++
		}
		runs = append(runs, parquetx.Range{Offset: int64(i), Length: int64(j - i)})
		i = j
	}
	var out []parquetx.Range
	for _, r := range runs {
		if n := len(out); n > 0 && r.Offset-out[n-1].End() <= gap {
			out[n-1].Length = r.End() - out[n-1].Offset
			continue
		}
		out = append(out, r)
	}
	return out
}

func TestMergeRangesAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 3000; iter++ {
		universe := 1 + rng.IntN(300)
		n := rng.IntN(12)
		rs := make([]parquetx.Range, n)
		for i := range rs {
			off := rng.IntN(universe)
			rs[i] = parquetx.Range{Offset: int64(off), Length: int64(rng.IntN(universe - off + 1))}
		}
		gap := int64(rng.IntN(4)) * int64(rng.IntN(10))
		in := slices.Clone(rs)
		got := parquetx.MergeRanges(rs, gap)
		want := bruteMerge(rs, gap, universe)
		if !slices.Equal(got, want) {
			t.Fatalf("MergeRanges(%v, gap=%d) = %v, want %v", rs, gap, got, want)
		}
		if !slices.Equal(rs, in) {
			t.Fatalf("MergeRanges modified its input")
		}
	}
}

func TestChunkRangesSelection(t *testing.T) {
	data, _ := writeParquet(t, fileVariants[0])
	f := mustFooter(t, data)
	col := func(g, c int) parquetx.Range { return f.RowGroups[g].Columns[c].Range() }

	cases := []struct {
		name    string
		groups  []int
		columns []string
		gap     int64
		want    []parquetx.Range
		wantErr error
	}{
		{name: "one leaf", groups: []int{1}, columns: []string{"id"}, want: []parquetx.Range{col(1, 0)}},
		{name: "struct selects its leaves, adjacent chunks merge", groups: []int{2}, columns: []string{"point"},
			want: []parquetx.Range{{Offset: col(2, 4).Offset, Length: col(2, 5).End() - col(2, 4).Offset}}},
		{name: "list by its root", groups: []int{0}, columns: []string{"tags"}, want: []parquetx.Range{col(0, 3)}},
		{name: "leaf by full path", groups: []int{0}, columns: []string{"tags.list.element"}, want: []parquetx.Range{col(0, 3)}},
		{name: "two apart stay apart", groups: []int{0}, columns: []string{"id", "score"}, want: []parquetx.Range{col(0, 0), col(0, 2)}},
		{name: "gap bridges them", groups: []int{0}, columns: []string{"id", "score"}, gap: col(0, 1).Length,
			want: []parquetx.Range{{Offset: col(0, 0).Offset, Length: col(0, 2).End() - col(0, 0).Offset}}},
		{name: "whole row group", groups: []int{3}, want: []parquetx.Range{f.RowGroups[3].Range()}},
		{name: "all", want: []parquetx.Range{{Offset: 4, Length: f.RowGroups[3].Range().End() - 4}}},
		{name: "duplicates are harmless", groups: []int{1, 1}, columns: []string{"id", "id"}, want: []parquetx.Range{col(1, 0)}},
		{name: "prefix of a name is not a path", groups: []int{0}, columns: []string{"poi"}, wantErr: parquetx.ErrNoSuchColumn},
		{name: "unknown column", groups: []int{0}, columns: []string{"nope"}, wantErr: parquetx.ErrNoSuchColumn},
		{name: "row group out of range", groups: []int{4}, wantErr: parquetx.ErrNoSuchRowGroup},
		{name: "negative row group", groups: []int{-1}, wantErr: parquetx.ErrNoSuchRowGroup},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parquetx.ChunkRanges(f, tc.groups, tc.columns, tc.gap)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ChunkRanges = (%v, %v), want %v", got, err, tc.want)
			}
		})
	}
}
