package membership

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/locuscache/locus/pkg/ring"
)

// BenchmarkMetaCodec compares the metadata wire format with encoding/json
// (the baseline) on the same NodeMeta. Every alive message carries it and
// every NotifyAlive decodes it.
func BenchmarkMetaCodec(b *testing.B) {
	m := fullMeta()
	enc := must(m.MarshalBinary())
	js, _ := json.Marshal(m)
	b.Logf("sizes: binary %d bytes, json %d bytes", len(enc), len(js))
	b.Run("encode/binary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = m.MarshalBinary()
		}
	})
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(m)
		}
	})
	b.Run("decode/binary", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		var out NodeMeta
		for b.Loop() {
			_ = out.UnmarshalBinary(enc)
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(js)))
		var out NodeMeta
		for b.Loop() {
			_ = json.Unmarshal(js, &out)
		}
	})
}

// BenchmarkPublish measures what the publisher goroutine does per change:
// buildView with a membership change (a new ring) and with a state change
// (the ring is reused), against ring.New alone as the baseline.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		ms := make([]Member, n)
		for i := range ms {
			ms[i] = member(fmt.Sprintf("node-%04d", i), fmt.Sprintf("r%d", i%4), StateAlive, RoleCache)
		}
		nodes := ringNodes(ms)
		prev, err := buildView(ms, 0, nil, ring.Config{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("nodes=%d/ring.New", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = ring.New(nodes, ring.Config{})
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/membership-change", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = buildView(ms, 0, nil, ring.Config{})
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/state-change", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = buildView(ms, 0, prev, ring.Config{})
			}
		})
	}
}
