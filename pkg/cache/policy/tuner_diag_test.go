package policy

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestDiag is an experiment, not a check: for each trace@percent point it
// prints the full-size hit ratio of every fixed candidate, the default
// policy's switches over time, the hit ratio of the live cache and of each
// shadow on the sampled accesses per tenth of the trace and, with -diagv,
// every decision's lead, significance, projection and cost per candidate
// (the fourth round's diagnosis in EXPERIMENTS.md came from it):
//
//	go test ./pkg/cache/policy -run TestDiag -count=1 -v \
//	    -args -diag cache2k-web07@25,lirs-cpp@25 [-diagv] [-diagseed 2]
var (
	diagPoints  = flag.String("diag", "", "trace@percent,... for TestDiag (empty: skip)")
	diagVerbose = flag.Bool("diagv", false, "TestDiag prints every decision")
	diagSeed    = flag.Uint64("diagseed", 1, "the default policy's seed in TestDiag")
	diagSegs    = flag.Int("diagsegs", 10, "TestDiag's segments of the trace (hit ratios per segment)")
)

func diagRead(t *testing.T, name string) ([]uint64, int) {
	path := filepath.Join("..", "sim", "testdata", "traces", name+".keys.gz")
	if strings.ContainsRune(name, '/') {
		path = name // a trace file of one's own (keys format, gzip)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(z)
	var keys []uint64
	seen := map[uint64]bool{}
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		v, _ := strconv.ParseUint(s, 10, 64)
		h := xxhash.Sum64String(strconv.FormatUint(v, 10))
		keys = append(keys, h)
		seen[h] = true
	}
	return keys, len(seen)
}

func diagRun(p Policy, keys []uint64) float64 {
	var v []uint64
	h := 0
	for _, k := range keys {
		if p.Touch(k) {
			h++
			continue
		}
		v, _ = p.Insert(k, v[:0])
	}
	return float64(h) / float64(len(keys))
}

func TestDiag(t *testing.T) {
	if *diagPoints == "" {
		t.Skip("an experiment: run with -args -diag trace@percent,...")
	}
	for _, pt := range strings.Split(*diagPoints, ",") {
		name, fs, _ := strings.Cut(pt, "@")
		frac, _ := strconv.ParseFloat(fs, 64)
		keys, distinct := diagRead(t, name)
		capacity := int(frac/100*float64(distinct) + 0.5)
		var b strings.Builder
		fmt.Fprintf(&b, "== %s cap %d (%d accesses)\n", pt, capacity, len(keys))
		// Fixed candidates at full size.
		for _, c := range candidates {
			var p Policy
			if c.kind == kindARC {
				p = newARC(capacity, 1)
			} else {
				tl := newTinyLFU(capacity, 1, c.window)
				tl.filter, tl.margin = c.filter, c.margin
				p = tl
			}
			fmt.Fprintf(&b, "  fixed %v: %.2f\n", c, 100*diagRun(p, keys))
		}
		// The tuner's run.
		p, _ := New(capacity, *diagSeed)
		tu := tunerOf(p)
		var i int
		var cur int
		var sampHits []int
		var sampN int
		liveHits := 0
		var vic []uint64
		var segLive, segN int
		segShadow := make([]int, len(tu.shadows))
		decisionHook = func(t *tuner, best int) {
			if !*diagVerbose {
				return
			}
			k := len(t.shadows)
			fmt.Fprintf(&b, "   decide at %d (span %d, acc %.0f): cur %d best %d:", i, t.next, t.acc, t.cur, best)
			for j := 0; j < k; j++ {
				if j == t.cur {
					continue
				}
				gain := t.wins[j*k+t.cur] - t.wins[t.cur*k+j]
				sig := math.Sqrt(t.wins[j*k+t.cur] + t.wins[t.cur*k+j])
				fmt.Fprintf(&b, " [%d g %.0f s %.1f p %.0f c %.0f]", j, gain, gain/sig, gain*min(horizon*float64(t.period)/t.acc, maxProjection), t.switchCost(j))
			}
			b.WriteString("\n")
		}
		defer func() { decisionHook = nil }()
		sampHits = make([]int, len(tu.shadows))
		seg := max(1, len(keys) / *diagSegs)
		for i = 0; i < len(keys); i++ {
			k := keys[i]
			samp := tu.sampled(k)
			if samp {
				for j, s := range tu.shadows {
					if s.contains(k) {
						sampHits[j]++
						segShadow[j]++
					}
				}
				sampN++
			}
			hit := p.Touch(k)
			if hit {
				liveHits++
				if samp {
					segLive++
				}
			} else {
				vic, _ = p.Insert(k, vic[:0])
			}
			if samp {
				segN++
			}
			if tu.cur != cur {
				fmt.Fprintf(&b, "  switch at %d (%.0f%%): %v -> %v\n", i, 100*float64(i)/float64(len(keys)), tu.cands[cur], tu.cands[tu.cur])
				cur = tu.cur
			}
			if (i+1)%seg == 0 {
				fmt.Fprintf(&b, "   seg %d: cur %d live(sampled) %.1f shadows", (i+1)/seg, cur, 100*float64(segLive)/float64(segN))
				for j := range segShadow {
					fmt.Fprintf(&b, " %.1f", 100*float64(segShadow[j])/float64(segN))
					segShadow[j] = 0
				}
				b.WriteString("\n")
				segLive, segN = 0, 0
			}
		}
		fmt.Fprintf(&b, "  locus %.2f, full=%v, sampled %d; shadow hit ratios:", 100*float64(liveHits)/float64(len(keys)), tu.full, sampN)
		for j := range sampHits {
			fmt.Fprintf(&b, " %v=%.2f", tu.cands[j], 100*float64(sampHits[j])/float64(sampN))
		}
		b.WriteString("\n")
		t.Log("\n" + b.String())
	}
}
