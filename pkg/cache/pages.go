package cache

import (
	"fmt"
	"math"
)

// clampRange checks a read of [off, off+length) of an object of size bytes
// and returns the end of the part inside the object. See ErrInvalidRange
// and ErrOutOfRange.
func clampRange(size, off, length int64) (end int64, err error) {
	switch {
	case off < 0:
		return 0, fmt.Errorf("%w: negative offset %d", ErrInvalidRange, off)
	case length < 1:
		return 0, fmt.Errorf("%w: length %d, want at least 1", ErrInvalidRange, length)
	case off > math.MaxInt64-length:
		return 0, fmt.Errorf("%w: offset %d + length %d overflows", ErrInvalidRange, off, length)
	case off > size:
		return 0, fmt.Errorf("%w: offset %d, object size %d", ErrOutOfRange, off, size)
	}
	return min(off+length, size), nil
}

// numPages is how many pages an object of size bytes has (without
// overflow, up to math.MaxInt64 bytes).
func numPages(size int64, pageSize int) int64 {
	n := size / int64(pageSize)
	if size%int64(pageSize) != 0 {
		n++
	}
	return n
}

// pageLen is the length of page p of an object of size bytes: pageSize for
// every page but the last, which may be short.
func pageLen(size int64, pageSize int, p int64) int {
	return int(min(int64(pageSize), size-p*int64(pageSize)))
}

// pageSpan returns the pages [first, last] holding bytes [off, end), end >
// off.
func pageSpan(off, end int64, pageSize int) (first, last int64) {
	return off / int64(pageSize), (end - 1) / int64(pageSize)
}

// within returns the part [lo, hi) of page p that falls inside [off, end).
func within(off, end int64, pageSize int, p int64) (lo, hi int) {
	start := p * int64(pageSize)
	return int(max(off, start) - start), int(min(end, start+int64(pageSize)) - start)
}
