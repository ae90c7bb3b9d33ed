package parquetx

import (
	"errors"
	"fmt"
)

// checkCompactThrift walks a Thrift compact-protocol struct without
// building it and rejects encodings whose declared sizes cannot be real:
// a list, set or map with more elements than bytes left, a string longer
// than the bytes left, nesting deeper than maxThriftDepth, unknown types.
//
// Why: the Thrift library under arrow-go checks a list's declared size only
// against its 100 MB message limit, then allocates that many elements up
// front, so a 10-byte hostile footer can allocate ~800 MB before failing.
// Every element takes at least one byte on the wire, so bounding sizes by
// the bytes left bounds what the real parser allocates by the footer's own
// size. The walk is linear and allocation-free.
func checkCompactThrift(b []byte) error {
	w := thriftWalker{b: b}
	if err := w.structure(0); err != nil {
		return fmt.Errorf("thrift at byte %d: %w", w.pos, err)
	}
	return nil
}

const maxThriftDepth = 64

// Compact protocol type ids.
const (
	ctStop    = 0
	ctTrue    = 1
	ctFalse   = 2
	ctByte    = 3
	ctI16     = 4
	ctI32     = 5
	ctI64     = 6
	ctDouble  = 7
	ctBinary  = 8
	ctList    = 9
	ctSet     = 10
	ctMap     = 11
	ctStruct  = 12
	ctUUID    = 13
	errThrift = "thrift: "
)

var errTruncated = errors.New("thrift: truncated")

type thriftWalker struct {
	b   []byte
	pos int
}

func (w *thriftWalker) left() int { return len(w.b) - w.pos }

func (w *thriftWalker) byte1() (byte, error) {
	if w.pos >= len(w.b) {
		return 0, errTruncated
	}
	c := w.b[w.pos]
	w.pos++
	return c, nil
}

func (w *thriftWalker) skip(n int) error {
	if n < 0 || n > w.left() {
		return fmt.Errorf("%s%d bytes declared, %d left", errThrift, n, w.left())
	}
	w.pos += n
	return nil
}

func (w *thriftWalker) varint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 70; shift += 7 {
		c, err := w.byte1()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New(errThrift + "varint longer than 10 bytes")
}

// count reads a collection size and checks it against the bytes left,
// given the minimum bytes one element takes.
func (w *thriftWalker) count(n uint64, minBytes int) (int, error) {
	if n > uint64(w.left()/minBytes) {
		return 0, fmt.Errorf("%scollection of %d elements in %d bytes", errThrift, n, w.left())
	}
	return int(n), nil
}

func (w *thriftWalker) structure(depth int) error {
	if depth > maxThriftDepth {
		return errors.New(errThrift + "nesting too deep")
	}
	for {
		h, err := w.byte1()
		if err != nil {
			return err
		}
		t := h & 0x0f
		if t == ctStop {
			return nil
		}
		if h>>4 == 0 { // long form: the field id follows as a varint
			if _, err := w.varint(); err != nil {
				return err
			}
		}
		if t == ctTrue || t == ctFalse {
			continue // the value is the type
		}
		if err := w.value(t, depth); err != nil {
			return err
		}
	}
}

func (w *thriftWalker) value(t byte, depth int) error {
	switch t {
	case ctTrue, ctFalse, ctByte: // in collections a bool is one byte
		return w.skip(1)
	case ctI16, ctI32, ctI64:
		_, err := w.varint()
		return err
	case ctDouble:
		return w.skip(8)
	case ctUUID:
		return w.skip(16)
	case ctBinary:
		n, err := w.varint()
		if err != nil {
			return err
		}
		if n > uint64(w.left()) {
			return fmt.Errorf("%sstring of %d bytes, %d left", errThrift, n, w.left())
		}
		return w.skip(int(n))
	case ctStruct:
		return w.structure(depth + 1)
	case ctList, ctSet:
		h, err := w.byte1()
		if err != nil {
			return err
		}
		size, et := uint64(h>>4), h&0x0f
		if size == 15 {
			if size, err = w.varint(); err != nil {
				return err
			}
		}
		n, err := w.count(size, 1)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := w.value(et, depth+1); err != nil {
				return err
			}
		}
		return nil
	case ctMap:
		size, err := w.varint()
		if err != nil {
			return err
		}
		if size == 0 {
			return nil
		}
		kv, err := w.byte1()
		if err != nil {
			return err
		}
		n, err := w.count(size, 2)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := w.value(kv>>4, depth+1); err != nil {
				return err
			}
			if err := w.value(kv&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%sunknown type %d", errThrift, t)
}
