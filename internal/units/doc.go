// Package units parses and formats the byte sizes the Locus daemons and
// tools take as flags (--block-size 128MiB, --cache-size 10GiB,
// --memory-size 1g).
//
// # Accepted forms
//
// A size is a non-negative number, optionally with a decimal point,
// followed by an optional unit (case-insensitive, white space allowed
// between):
//
//	""  or B                  bytes                  134217728, 4096B
//	KiB MiB GiB TiB           binary (1024^n)        128MiB, 10GiB
//	k   m   g   t             binary, as java -Xmx   1g, 512k
//	KB  MB  GB  TB            decimal (1000^n)       500MB
//
// A fraction is allowed with a unit and rounds down to whole bytes
// ("1.5GiB" is 1610612736). Negative numbers, exponents ("1e9"), unknown
// units and values past math.MaxInt64 are errors wrapping ErrSyntax or
// ErrRange.
//
// FormatBytes writes the largest binary unit that divides the value
// exactly, so its output always parses back to the same number:
// FormatBytes(128<<20) is "128MiB", FormatBytes(1000) is "1000".
// Flag wraps an *int64 as a flag.Value that uses both.
package units
