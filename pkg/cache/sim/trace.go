package sim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Format names a trace file format.
type Format string

// The trace formats Read understands. Each may be gzip-compressed; gzip is
// detected by its magic bytes, not by the file name.
const (
	// FormatKeys is one decimal key per line, one line per access (the
	// format of /work/shared/traces).
	FormatKeys Format = "keys"
	// FormatLIRS is the format of the LIRS traces: one block number per line.
	// A trailing '*' on a line (the traces end with a lone "*") is ignored.
	FormatLIRS Format = "lirs"
	// FormatARC is the format of the ARC traces of Megiddo and Modha: each
	// line is "start_block num_blocks ignore request_no" and stands for
	// num_blocks accesses to the consecutive blocks from start_block (the
	// fields after the second are ignored, as Caffeine's reader does).
	FormatARC Format = "arc"
)

// Formats lists the formats Read accepts.
var Formats = []Format{FormatKeys, FormatLIRS, FormatARC}

// Errors returned by Read and ReadFile. Errors about a line wrap ErrMalformed
// and name the line.
var (
	ErrFormat    = errors.New("unknown trace format")
	ErrMalformed = errors.New("malformed trace line")
	ErrEmpty     = errors.New("trace has no accesses")
	ErrTooLong   = errors.New("trace too long")
)

// maxAccesses and maxDistinct bound a trace so that memory stays
// predictable. A trace takes 8 bytes per access for the keys and 4 for
// their dense ids, Belady 4 more per access for its next-use positions,
// and the distinct keys' map about 40 bytes per key (each replay's cache
// comes on top: about 100 to 300 bytes per key of its capacity, by
// policy). At the caps, 2^28 accesses of 2^25 distinct keys, that is about
// 5.5 GiB before the replays; a trace of 2^24 all-distinct accesses read
// and replayed through Belady peaked at 1.4 GB RSS before the ids were
// shared with Belady. An ARC line may expand to maxRun accesses, so a few
// bytes of input can reach the caps: Read fails there, with ErrTooLong,
// instead of growing to tens of GiB.
var (
	maxAccesses = 1 << 28
	maxDistinct = 1 << 25 // a var so that a test can lower it
)

// maxRun bounds num_blocks of one ARC trace line.
const maxRun = 1 << 24

// Trace is a replayable access sequence.
type Trace struct {
	// Name is the trace's name (the file's base name for ReadFile).
	Name string
	// Keys are the accesses in order, each trace key hashed with HashKey.
	Keys []uint64
	// Distinct is the number of distinct keys.
	Distinct int

	// ids[i] is the dense id (0 to Distinct-1, in order of first access)
	// of Keys[i], set by Read so that Belady needs no second map; nil for
	// a Trace built by hand (NewOracle then numbers the keys itself).
	ids []int32
}

// HashKey maps a trace key to the 64-bit key the policies see: xxhash64 of
// its decimal form, the same hash the page cache applies to its page keys, so
// the policies see keys as well mixed as in production.
func HashKey(k uint64) uint64 {
	var buf [20]byte
	return xxhash.Sum64(strconv.AppendUint(buf[:0], k, 10))
}

// ReadFile reads the trace at path in the given format, plain or gzip.
func ReadFile(path string, format Format) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open trace %q: %w", path, err)
	}
	defer f.Close()
	t, err := Read(f, format, path)
	if err != nil {
		return nil, err
	}
	t.Name = baseName(path)
	return t, nil
}

func baseName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' || path[i] == '\\' {
			return path[i+1:]
		}
	}
	return path
}

// Read reads a trace in the given format from r, plain or gzip (detected by
// the magic bytes). name is used in error messages. It returns ErrFormat for
// an unknown format, an error wrapping ErrMalformed that names the line for a
// bad line, ErrEmpty for a trace without accesses and ErrTooLong past 2^28
// accesses or 2^25 distinct keys.
func Read(r io.Reader, format Format, name string) (*Trace, error) {
	var parse func(line []byte, emit func(uint64)) error
	switch format {
	case FormatKeys:
		parse = parseKeyLine
	case FormatLIRS:
		parse = parseLIRSLine
	case FormatARC:
		parse = parseARCLine
	default:
		return nil, fmt.Errorf("%w %q (want keys, lirs or arc)", ErrFormat, format)
	}
	br := bufio.NewReaderSize(r, 1<<16)
	gz := false
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz = true
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("cannot read gzip trace %q: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	t := &Trace{Name: name}
	seen := make(map[uint64]int32)
	var tooLong error
	emit := func(k uint64) {
		if tooLong != nil {
			return
		}
		if len(t.Keys) >= maxAccesses {
			tooLong = fmt.Errorf("more than %d accesses", maxAccesses)
			return
		}
		h := HashKey(k)
		id, ok := seen[h]
		if !ok {
			if len(seen) >= maxDistinct {
				tooLong = fmt.Errorf("more than %d distinct keys (a replay keeps every key in memory: replay a sample of the keys)", maxDistinct)
				return
			}
			id = int32(len(seen))
			seen[h] = id
		}
		t.Keys = append(t.Keys, h)
		t.ids = append(t.ids, id)
	}
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("%s:%d: %w: line longer than %d bytes", name, lineNo, ErrMalformed, br.Size())
		}
		if err != nil && err != io.EOF {
			if gz {
				return nil, fmt.Errorf("cannot read trace %q at line %d: its gzip data is truncated, corrupt or followed by bytes that are not gzip (%w)", name, lineNo, err)
			}
			return nil, fmt.Errorf("cannot read trace %q at line %d: %w", name, lineNo, err)
		}
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
		}
		if perr := parse(bytes.TrimSpace(line), emit); perr != nil {
			return nil, fmt.Errorf("%s:%d: %w: %v", name, lineNo, ErrMalformed, perr)
		}
		if tooLong != nil {
			return nil, fmt.Errorf("%s:%d: %w: %v", name, lineNo, ErrTooLong, tooLong)
		}
		if err == io.EOF {
			break
		}
	}
	if len(t.Keys) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	t.Distinct = len(seen)
	return t, nil
}

// parseKeyLine parses "KEY"; blank lines are skipped.
func parseKeyLine(line []byte, emit func(uint64)) error {
	if len(line) == 0 {
		return nil
	}
	k, err := parseUint(line)
	if err != nil {
		return err
	}
	emit(k)
	return nil
}

// parseLIRSLine parses "BLOCK", tolerating a trailing '*' and blank lines.
func parseLIRSLine(line []byte, emit func(uint64)) error {
	line = bytes.TrimSpace(bytes.TrimSuffix(line, []byte("*")))
	return parseKeyLine(line, emit)
}

// parseARCLine parses "start_block num_blocks ignore request_no" into
// num_blocks accesses. As Caffeine's ARC trace reader does, it reads the
// first two fields and ignores the rest (the real traces have four), and
// a num_blocks of 0 is a line without accesses.
func parseARCLine(line []byte, emit func(uint64)) error {
	if len(line) == 0 {
		return nil
	}
	fields := bytes.Fields(line)
	if len(fields) < 2 {
		return fmt.Errorf("want \"start_block num_blocks ignore request_no\", got %d field in %q", len(fields), truncate(line))
	}
	start, err := parseUint(fields[0])
	if err != nil {
		return fmt.Errorf("start_block: %v", err)
	}
	n, err := parseUint(fields[1])
	if err != nil {
		return fmt.Errorf("num_blocks: %v", err)
	}
	if n > maxRun {
		return fmt.Errorf("num_blocks %d out of range [0, %d]", n, maxRun)
	}
	if n > 0 && start > math.MaxUint64-(n-1) {
		return fmt.Errorf("start_block %d + num_blocks %d overflows", start, n)
	}
	for i := uint64(0); i < n; i++ {
		emit(start + i)
	}
	return nil
}

func parseUint(b []byte) (uint64, error) {
	var k uint64
	if len(b) == 0 {
		return 0, errors.New("empty key")
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a decimal key", truncate(b))
		}
		d := uint64(c - '0')
		if k > (math.MaxUint64-d)/10 {
			return 0, fmt.Errorf("%q overflows a 64-bit key", truncate(b))
		}
		k = k*10 + d
	}
	return k, nil
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
