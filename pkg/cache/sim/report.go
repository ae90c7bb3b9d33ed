package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Baselines are the library and LRU baselines the default policy is compared
// with in a report's gap column.
var Baselines = []string{"lru", NameARC, NameWTinyLFU}

// Row is one capacity of a report: every policy's hit ratio at that size.
type Row struct {
	Capacity int
	Fraction float64
	Ratio    map[string]float64
}

// Gap returns the default policy's hit ratio minus the best baseline's (in
// hit-ratio units, not points), and whether every term was present.
func (r Row) Gap(defaultName string) (float64, bool) {
	d, ok := r.Ratio[defaultName]
	if !ok {
		return 0, false
	}
	best, any := 0.0, false
	for _, b := range Baselines {
		if v, ok := r.Ratio[b]; ok {
			best, any = max(best, v), true
		}
	}
	return d - best, any
}

// Rows groups results by capacity, in the order of first appearance.
func Rows(rs []Result) []Row {
	var rows []Row
	idx := map[int]int{}
	for _, r := range rs {
		i, ok := idx[r.Capacity]
		if !ok {
			i = len(rows)
			idx[r.Capacity] = i
			rows = append(rows, Row{Capacity: r.Capacity, Fraction: r.Fraction, Ratio: map[string]float64{}})
		}
		rows[i].Ratio[r.Policy] = r.HitRatio
	}
	return rows
}

// policiesOf lists the policies of rs in order of first appearance.
func policiesOf(rs []Result) []string {
	var names []string
	for _, r := range rs {
		if !slices.Contains(names, r.Policy) {
			names = append(names, r.Policy)
		}
	}
	return names
}

// WriteTable writes rs as an aligned table of hit ratios in percent, one row
// per capacity, and, when the default policy and a baseline were run, the
// default's gap to the best baseline in percentage points.
func WriteTable(w io.Writer, defaultName string, rs []Result) error {
	names := policiesOf(rs)
	rows := Rows(rs)
	withGap := slices.Contains(names, defaultName) && slices.ContainsFunc(names, func(n string) bool {
		return slices.Contains(Baselines, n)
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"capacity", "of keys"}
	for _, n := range names {
		head = append(head, n)
	}
	if withGap {
		head = append(head, "locus vs best baseline (pts)")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		cells := []string{fmt.Sprint(r.Capacity), "-"}
		if r.Fraction > 0 {
			cells[1] = fmt.Sprintf("%.4g%%", r.Fraction*100)
		}
		for _, n := range names {
			cells = append(cells, fmt.Sprintf("%.2f%%", r.Ratio[n]*100))
		}
		if withGap {
			g, _ := r.Gap(defaultName)
			cells = append(cells, fmt.Sprintf("%+.2f", g*100))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	return tw.Flush()
}
