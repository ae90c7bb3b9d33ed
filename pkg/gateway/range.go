package gateway

import (
	"cmp"
	"errors"
	"math"
	"strings"
)

// Errors of ParseRange. Both are answered with an S3 error document; see
// the package doc for the table.
var (
	// ErrMalformedRange: the Range header is not a single byte-range-spec
	// of RFC 9110 (unknown unit, non-digits, "bytes=-", last < first, ...).
	// The gateway answers 400 InvalidArgument unless Config.LenientRange
	// is set, in which case it ignores the header as S3 does.
	ErrMalformedRange = errors.New("gateway: malformed Range header")
	// ErrUnsatisfiableRange: a well-formed range selects no byte of the
	// object (first byte at or past the end, "bytes=-0", any range of an
	// empty object). The gateway answers 416 InvalidRange.
	ErrUnsatisfiableRange = errors.New("gateway: range not satisfiable")
)

// ByteRange is a satisfiable byte range of an object: Length >= 1 bytes
// starting at Start, all inside the object.
type ByteRange struct {
	Start, Length int64
}

// End returns Start+Length (the first byte past the range).
func (r ByteRange) End() int64 { return r.Start + r.Length }

// ParseRange interprets a Range header value against an object of size
// bytes, as S3's GetObject does for the cases S3 serves:
//
//	""                     ok=false: no range, serve the whole object (200)
//	"bytes=a-b"            bytes a..min(b, size-1)            (206)
//	"bytes=a-"             bytes a..size-1                    (206)
//	"bytes=-n"             the last min(n, size) bytes        (206)
//	"bytes=0-1,5-9"        ok=false: S3 does not do multi-range requests and
//	                       ignores the header, so the whole object is served
//
// A first byte at or past the end, "bytes=-0" and any range of an empty
// object give ErrUnsatisfiableRange. Anything else that is not one
// byte-range-spec (another unit, signs, spaces inside, "bytes=5-2",
// "bytes=-") gives ErrMalformedRange. The unit is matched case-insensitively;
// numbers too large for int64 saturate (a first byte that large is past any
// end, a last byte or suffix that large means "to the end"). A negative size
// is treated as 0. ParseRange never panics.
func ParseRange(header string, size int64) (r ByteRange, ok bool, err error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return ByteRange{}, false, nil
	}
	size = max(size, 0)
	unit, spec, found := strings.Cut(header, "=")
	if !found || !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		return ByteRange{}, false, ErrMalformedRange
	}
	if strings.Contains(spec, ",") {
		// A multi-range request. S3 ignores it and sends the whole object.
		return ByteRange{}, false, nil
	}
	spec = strings.TrimSpace(spec)
	first, last, found := strings.Cut(spec, "-")
	if !found {
		return ByteRange{}, false, ErrMalformedRange
	}
	if first == "" {
		// Suffix range: the last n bytes.
		n, okN := parseDigits(last)
		if !okN {
			return ByteRange{}, false, ErrMalformedRange
		}
		if n == 0 || size == 0 {
			return ByteRange{}, false, ErrUnsatisfiableRange
		}
		n = min(n, size)
		return ByteRange{Start: size - n, Length: n}, true, nil
	}
	a, okA := parseDigits(first)
	if !okA {
		return ByteRange{}, false, ErrMalformedRange
	}
	end := int64(math.MaxInt64) // inclusive last byte
	if last != "" {
		b, okB := parseDigits(last)
		if !okB {
			return ByteRange{}, false, ErrMalformedRange
		}
		if cmpDigits(last, first) < 0 { // exact, even where a and b saturate
			return ByteRange{}, false, ErrMalformedRange
		}
		end = b
	}
	if a >= size {
		return ByteRange{}, false, ErrUnsatisfiableRange
	}
	end = min(end, size-1)
	return ByteRange{Start: a, Length: end - a + 1}, true, nil
}

// parseDigits parses a non-empty run of ASCII digits, saturating at
// math.MaxInt64. ok is false for an empty string or any other character.
func parseDigits(s string) (n int64, ok bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + d
	}
	return n, true
}

// cmpDigits compares two runs of ASCII digits as the numbers they write.
func cmpDigits(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return strings.Compare(a, b)
}
