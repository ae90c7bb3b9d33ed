package daemon

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits maps a unit suffix (lower case) to its multiplier. Binary:
// KiB, MiB, GiB, TiB and the one-letter k, m, g, t (as java -Xmx and
// docker read them); decimal: KB, MB, GB, TB; B or nothing: bytes.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// parseSize parses a byte size: a non-negative number (decimals allowed
// with a unit) followed by an optional unit, e.g. "134217728", "128MiB",
// "10GiB", "1g", "1.5GiB", "500MB".
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (KiB, MiB, GiB, TiB, k, m, g, t, KB, MB, GB, TB)", s)
	}
	if !strings.Contains(num, ".") {
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("size %q: %v", s, err)
		}
		if mult != 1 && v > math.MaxInt64/int64(mult) {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return v * int64(mult), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %v", s, err)
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// formatSize renders a size with the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		v    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// sizeFlag is a flag.Value holding a byte size.
type sizeFlag struct{ v *int64 }

func (f sizeFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return ""
	}
	return formatSize(*f.v)
}

func (f sizeFlag) Set(s string) error {
	v, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.v = v
	return nil
}

// listFlag is a comma-separated list.
type listFlag struct{ v *[]string }

func (f listFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strings.Join(*f.v, ",")
}

func (f listFlag) Set(s string) error {
	*f.v = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*f.v = append(*f.v, p)
		}
	}
	return nil
}
