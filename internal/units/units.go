package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Sentinel errors of ParseBytes; compare with errors.Is.
var (
	// ErrSyntax: the text is not a number with an optional known unit.
	ErrSyntax = errors.New("units: not a byte size")
	// ErrRange: the size does not fit in an int64.
	ErrRange = errors.New("units: byte size out of range")
)

// Binary units.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// multipliers maps a unit suffix (lower case) to its multiplier.
var multipliers = map[string]int64{
	"": 1, "b": 1,
	"k": KiB, "kib": KiB, "m": MiB, "mib": MiB,
	"g": GiB, "gib": GiB, "t": TiB, "tib": TiB,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// ParseBytes parses a byte size such as "134217728", "128MiB", "10GiB",
// "1g", "1.5GiB" or "500MB" (see the package doc for the units). It
// returns an error wrapping ErrSyntax for text that is not a size and
// ErrRange for a size above math.MaxInt64.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := multipliers[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("%w: %q: want a number of bytes with an optional unit (KiB, MiB, GiB, TiB, k, m, g, t, KB, MB, GB, TB)", ErrSyntax, s)
	}
	if !strings.Contains(num, ".") {
		v, err := strconv.ParseUint(num, 10, 64)
		if err != nil || v > math.MaxInt64 || v > uint64(math.MaxInt64/mult) {
			return 0, fmt.Errorf("%w: %q is larger than %d bytes", ErrRange, s, int64(math.MaxInt64))
		}
		return int64(v) * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: %v", ErrSyntax, s, err)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %q is larger than %d bytes", ErrRange, s, int64(math.MaxInt64))
	}
	return int64(v), nil
}

// MustParseBytes is ParseBytes for constants in code; it panics on an
// error.
func MustParseBytes(s string) int64 {
	v, err := ParseBytes(s)
	if err != nil {
		panic(err)
	}
	return v
}

// FormatBytes renders n with the largest binary unit that divides it
// exactly ("128MiB", "3GiB"), or as plain bytes ("1000", "0"), so that
// ParseBytes(FormatBytes(n)) == n for every n >= 0. Negative values are
// rendered as plain numbers.
func FormatBytes(n int64) string {
	if n > 0 {
		for _, u := range [...]struct {
			name string
			v    int64
		}{{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
			if n%u.v == 0 {
				return strconv.FormatInt(n/u.v, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10)
}

// HumanBytes renders n approximately, for people: "1.5 GiB", "980 KiB",
// "512 B". It does not parse back exactly; use FormatBytes for flags.
func HumanBytes(n int64) string {
	if n < 0 {
		return "-" + HumanBytes(-n)
	}
	for _, u := range [...]struct {
		name string
		v    int64
	}{{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if n >= u.v {
			return strconv.FormatFloat(float64(n)/float64(u.v), 'f', 1, 64) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}

// Flag returns a flag.Value that parses into *p with ParseBytes and
// prints *p with FormatBytes (empty when 0, so flag's help shows no
// default for an unset size):
//
//	fs.Var(units.Flag(&o.blockSize), "block-size", "cluster block size (default 128MiB)")
func Flag(p *int64) *BytesFlag { return &BytesFlag{p: p} }

// BytesFlag is the flag.Value returned by Flag.
type BytesFlag struct{ p *int64 }

// String implements flag.Value.
func (f *BytesFlag) String() string {
	if f == nil || f.p == nil || *f.p == 0 {
		return ""
	}
	return FormatBytes(*f.p)
}

// Set implements flag.Value.
func (f *BytesFlag) Set(s string) error {
	v, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*f.p = v
	return nil
}
