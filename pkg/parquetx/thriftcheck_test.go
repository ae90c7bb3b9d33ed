package parquetx_test

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/locuscache/locus/pkg/parquetx"
)

// TestHostileFooterAllocations: footers of a few bytes that declare huge
// collections must be refused before the Thrift library allocates for
// them (unchecked, the 100M-element list below costs ~800 MB).
func TestHostileFooterAllocations(t *testing.T) {
	cases := map[string][]byte{
		// version=1, schema: list<struct> of 100,000,000 elements
		"list of 1e8 structs": {0x15, 0x02, 0x19, 0xFC, 0x80, 0xC2, 0xD7, 0x2F, 0x00},
		// schema: list<i64> of 8M elements
		"list of 8M i64": {0x15, 0x02, 0x19, 0xF6, 0xFF, 0xFF, 0xFF, 0x03, 0x00},
		// key_value_metadata-like map of 1e8 entries at field 5
		"map of 1e8": {0x5B, 0x80, 0xC2, 0xD7, 0x2F, 0x88, 0x00},
		// a string declaring 1 GB
		"string of 1 GB": {0x18, 0x80, 0x80, 0x80, 0x80, 0x04, 0x00},
		// structs nested 1000 deep
		"deep nesting":   append(bytes.Repeat([]byte{0x1C}, 1000), bytes.Repeat([]byte{0x00}, 1001)...),
		"unknown type":   {0x1E, 0x00},
		"endless varint": {0x15, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01},
	}
	for name, meta := range cases {
		t.Run(name, func(t *testing.T) {
			data := frame(meta, 0)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
			runtime.ReadMemStats(&after)
			if !errors.Is(err, parquetx.ErrCorrupt) {
				t.Fatalf("ReadFooter = %v, want ErrCorrupt", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Fatalf("parsing a %d-byte footer allocated %d bytes", len(meta), alloc)
			}
		})
	}
}
