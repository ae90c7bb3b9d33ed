package parquetx_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/locuscache/locus/pkg/parquetx"
)

// isSentinel reports whether err wraps one of the package's documented
// input errors.
func isSentinel(err error) bool {
	for _, s := range []error{parquetx.ErrNotParquet, parquetx.ErrCorrupt, parquetx.ErrEncrypted, parquetx.ErrUnsupported} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// frame wraps footer metadata bytes into a minimal file: magic, a body of
// bodyLen bytes, the metadata, its length, magic.
func frame(meta []byte, bodyLen int) []byte {
	b := make([]byte, 0, 4+bodyLen+len(meta)+8)
	b = append(b, "PAR1"...)
	b = append(b, make([]byte, bodyLen)...)
	b = append(b, meta...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(meta)))
	return append(b, "PAR1"...)
}

// FuzzFooterMetadata fuzzes the Thrift footer itself (the part arrow-go
// parses) inside a well-framed file, seeded with real footers. Run with
//
//	go test ./pkg/parquetx -run XXX -fuzz FuzzFooterMetadata -fuzztime 2m -fuzzminimizetime 100x
//
// (the default minimization budget of 60s per new input, with inputs of a
// few KB through arrow-go, leaves the fuzzer minimizing most of the time).
func FuzzFooterMetadata(f *testing.F) {
	for _, o := range fileVariants {
		data, _ := writeParquet(f, o)
		ft := mustFooter(f, data)
		r := ft.FooterRange()
		meta := data[r.Offset : r.End()-8]
		f.Add(meta, uint16(r.Offset-4))
		f.Add(meta, uint16(10))
	}
	f.Fuzz(func(t *testing.T, meta []byte, bodyLen uint16) {
		data := frame(meta, int(bodyLen))
		ft, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		checkInvariants(t, ft)
		if dataEnd := ft.FooterRange().Offset; dataEnd != int64(4+int(bodyLen)) {
			t.Fatalf("footer range %v, want it to start at %d", ft.FooterRange(), 4+int(bodyLen))
		}
		_, _ = parquetx.OpenFile(bytes.NewReader(data), int64(len(data)), ft, nil)
	})
}

// FuzzReadFooter fuzzes whole objects, framing included.
func FuzzReadFooter(f *testing.F) {
	for _, o := range fileVariants[2:] {
		data, _ := writeParquet(f, o)
		f.Add(data)
		f.Add(data[:len(data)-3])
	}
	f.Add([]byte("PAR1PAR1PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ft, err := parquetx.ReadFooter(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		checkInvariants(t, ft)
	})
}
