package parquetx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotParquet: the object is too small or lacks the "PAR1" magic.
	ErrNotParquet = errors.New("parquetx: not a Parquet file")
	// ErrCorrupt: the object ends like Parquet but its footer cannot be
	// parsed or describes byte ranges that do not fit the object
	// (truncated or damaged file, or a version of the object other than
	// the one whose size was given).
	ErrCorrupt = errors.New("parquetx: corrupt Parquet footer")
	// ErrEncrypted: the file uses Parquet modular encryption, which is
	// not supported.
	ErrEncrypted = errors.New("parquetx: encrypted Parquet files are not supported")
	// ErrUnsupported: a valid file using a feature this package does not
	// handle (column chunks stored in another file).
	ErrUnsupported = errors.New("parquetx: unsupported Parquet feature")
	// ErrNoSuchRowGroup and ErrNoSuchColumn: a selection names a row group
	// index or column path the file does not have.
	ErrNoSuchRowGroup = errors.New("parquetx: no such row group")
	ErrNoSuchColumn   = errors.New("parquetx: no such column")
)

// Magic bytes at both ends of a Parquet file ("PARE" ends encrypted ones).
var (
	magic          = []byte("PAR1")
	magicEncrypted = []byte("PARE")
)

const (
	// trailerSize is the 4-byte footer length plus the 4-byte magic.
	trailerSize = 8
	// DefaultTailSize is how much of the end of an object ReadFooter reads
	// at first. Most footers fit, so one ranged read usually suffices;
	// larger footers cost exactly one more.
	DefaultTailSize = 64 << 10
	// MaxFooterSize bounds the footer length ReadFooter accepts, so a
	// corrupt length cannot make it allocate gigabytes.
	MaxFooterSize = 256 << 20
	// parquet816Padding mirrors arrow-go's PARQUET-816 workaround: old
	// parquet-mr writers left the dictionary page header out of
	// total_compressed_size, so readers read up to this many extra bytes.
	parquet816Padding = 100
)

// Range is a byte range of an object.
type Range struct {
	Offset int64
	Length int64
}

// End returns the offset just past the range.
func (r Range) End() int64 { return r.Offset + r.Length }

func (r Range) String() string { return fmt.Sprintf("[%d, %d)", r.Offset, r.End()) }

// ColumnChunk is where one column of one row group lies in the object.
type ColumnChunk struct {
	// Path is the dotted path of the leaf column, as Parquet names it:
	// "id", "point.x", "tags.list.element".
	Path string
	// Offset is the dictionary page offset when the chunk has a dictionary
	// page, else the first data page offset.
	Offset int64
	// Length is the chunk's total compressed size (plus up to 100 bytes for
	// files from parquet-mr before 1.2.9, as arrow-go reads them).
	Length int64
	// NumValues counts values including nulls (and list elements).
	NumValues int64
	// Codec is the compression codec, e.g. "SNAPPY", "UNCOMPRESSED".
	Codec string
}

// Range returns the chunk's byte range.
func (c ColumnChunk) Range() Range { return Range{c.Offset, c.Length} }

// RowGroup is one row group: its rows and the byte ranges of its columns.
type RowGroup struct {
	Index   int
	NumRows int64
	// Offset and Length span all the row group's column chunks (from the
	// first chunk's start to the last one's end).
	Offset  int64
	Length  int64
	Columns []ColumnChunk // schema (leaf) order
}

// Range returns the row group's byte range.
func (rg RowGroup) Range() Range { return Range{rg.Offset, rg.Length} }

// Footer is a parsed Parquet footer plus the byte layout derived from it.
// It is immutable and safe to share between goroutines.
type Footer struct {
	Size        int64    // size of the object the footer was read from
	MetadataLen int      // length of the Thrift FileMetaData
	NumRows     int64    // rows in the file
	CreatedBy   string   // writer, e.g. "parquet-go version 18.x"
	Columns     []string // dotted leaf column paths, schema order
	RowGroups   []RowGroup

	meta *metadata.FileMetaData
}

// Metadata returns arrow-go's parsed metadata, for handing to
// file.WithMetadata so a reader does not fetch the footer again. Treat it
// as read-only.
func (f *Footer) Metadata() *metadata.FileMetaData { return f.meta }

// FooterRange returns the bytes the footer occupies at the end of the
// object: the metadata, its length and the closing magic.
func (f *Footer) FooterRange() Range {
	n := int64(f.MetadataLen) + trailerSize
	return Range{f.Size - n, n}
}

// ReadFooter reads and parses the footer of the Parquet object r of the
// given size. It reads the last min(size, DefaultTailSize) bytes in one
// ReadAt and a second time only if the footer is larger. Errors wrap
// ErrNotParquet, ErrCorrupt, ErrEncrypted, ErrUnsupported, or the reader's
// own error. It never panics, even on hostile input.
func ReadFooter(r io.ReaderAt, size int64) (*Footer, error) {
	if size < int64(len(magic))+trailerSize {
		return nil, fmt.Errorf("%w: %d bytes is too small", ErrNotParquet, size)
	}
	tailLen := min(size, DefaultTailSize)
	tail := make([]byte, tailLen)
	if err := readFull(r, tail, size-tailLen); err != nil {
		return nil, fmt.Errorf("parquetx: cannot read the last %d bytes: %w", tailLen, err)
	}
	metaLen, err := checkTrailer(tail, size)
	if err != nil {
		return nil, err
	}
	need := metaLen + trailerSize
	if need > tailLen {
		buf := make([]byte, need)
		copy(buf[need-tailLen:], tail)
		if err := readFull(r, buf[:need-tailLen], size-need); err != nil {
			return nil, fmt.Errorf("parquetx: cannot read the %d-byte footer: %w", metaLen, err)
		}
		tail = buf
	}
	return ParseFooter(tail, size)
}

// readFull reads exactly len(p) bytes at off; io.EOF with a full buffer is
// success (io.ReaderAt allows it at the end).
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// checkTrailer validates the last 8 bytes and returns the metadata length.
func checkTrailer(tail []byte, size int64) (int64, error) {
	if len(tail) < trailerSize {
		return 0, fmt.Errorf("%w: %d bytes is too small", ErrNotParquet, len(tail))
	}
	end := tail[len(tail)-4:]
	switch {
	case bytes.Equal(end, magicEncrypted):
		return 0, ErrEncrypted
	case !bytes.Equal(end, magic):
		return 0, fmt.Errorf("%w: ends in %q, not \"PAR1\"", ErrNotParquet, end)
	}
	metaLen := int64(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if metaLen+trailerSize+int64(len(magic)) > size || metaLen > MaxFooterSize {
		return 0, fmt.Errorf("%w: footer length %d does not fit a %d-byte object (truncated, or the size is of another version?)", ErrCorrupt, metaLen, size)
	}
	if metaLen == 0 {
		return 0, fmt.Errorf("%w: footer length is 0", ErrCorrupt)
	}
	return metaLen, nil
}

// ParseFooter parses a footer from tail, the last len(tail) bytes of an
// object of the given size; tail must hold at least the metadata, its
// length and the magic. Errors are those of ReadFooter.
func ParseFooter(tail []byte, size int64) (f *Footer, err error) {
	if int64(len(tail)) > size {
		return nil, fmt.Errorf("parquetx: ParseFooter: tail of %d bytes is longer than the %d-byte object", len(tail), size)
	}
	metaLen, err := checkTrailer(tail, size)
	if err != nil {
		return nil, err
	}
	if metaLen+trailerSize > int64(len(tail)) {
		return nil, fmt.Errorf("parquetx: ParseFooter: the footer needs the last %d bytes, got %d", metaLen+trailerSize, len(tail))
	}
	raw := tail[int64(len(tail))-trailerSize-metaLen : len(tail)-trailerSize]
	defer func() {
		// arrow-go can panic on malformed metadata (nil fields, bad
		// indexes). A panic here is a corrupt input, not a bug of ours to
		// crash the node over.
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("%w: parser panicked: %v", ErrCorrupt, r)
		}
	}()
	if err := checkCompactThrift(raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	meta, err := metadata.NewFileMetaData(raw, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if meta.IsSetEncryptionAlgorithm() {
		return nil, fmt.Errorf("%w (plaintext footer with encrypted columns)", ErrEncrypted)
	}
	meta.SetSourceFileSize(size)
	return buildFooter(meta, size, int(metaLen))
}

func buildFooter(meta *metadata.FileMetaData, size int64, metaLen int) (*Footer, error) {
	f := &Footer{
		Size:        size,
		MetadataLen: metaLen,
		NumRows:     meta.GetNumRows(),
		CreatedBy:   meta.GetCreatedBy(),
		meta:        meta,
	}
	if f.NumRows < 0 {
		return nil, fmt.Errorf("%w: negative row count %d", ErrCorrupt, f.NumRows)
	}
	ncols := meta.Schema.NumColumns()
	for i := 0; i < ncols; i++ {
		f.Columns = append(f.Columns, meta.Schema.Column(i).ColumnPath().String())
	}
	dataEnd := size - int64(metaLen) - trailerSize // first byte of the footer
	pad := int64(0)
	if meta.WriterVersion().LessThan(metadata.Parquet816FixedVersion) {
		pad = parquet816Padding
	}
	var sumRows int64
	for i := 0; i < meta.NumRowGroups(); i++ {
		rgm := meta.RowGroup(i)
		rg := RowGroup{Index: i, NumRows: rgm.NumRows()}
		if rg.NumRows < 0 || rg.NumRows > math.MaxInt64-sumRows {
			return nil, fmt.Errorf("%w: row group %d has %d rows (after %d)", ErrCorrupt, i, rg.NumRows, sumRows)
		}
		sumRows += rg.NumRows
		if rgm.NumColumns() != ncols {
			return nil, fmt.Errorf("%w: row group %d has %d column chunks, the schema %d columns", ErrCorrupt, i, rgm.NumColumns(), ncols)
		}
		lo, hi := int64(-1), int64(-1)
		for j := 0; j < ncols; j++ {
			cc, err := rgm.ColumnChunk(j)
			if err != nil {
				return nil, fmt.Errorf("%w: row group %d column %d: %v", ErrCorrupt, i, j, err)
			}
			if fp := cc.FilePath(); fp != "" {
				return nil, fmt.Errorf("%w: row group %d column %d is stored in another file (%q)", ErrUnsupported, i, j, fp)
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			length := cc.TotalCompressedSize()
			limit := dataEnd
			if pad > 0 && start >= 0 && length >= 0 && start <= size-length {
				length += min(pad, size-(start+length))
				limit = size
			}
			if rg.NumRows == 0 && cc.NumValues() == 0 && start < int64(len(magic)) {
				// An empty row group (arrow-go writes one for a table of no
				// rows): its chunks hold nothing and point at byte 0.
				// Nothing to read: it spans no bytes.
				start, length = int64(len(magic)), 0
			}
			if start < int64(len(magic)) || length < 0 || start > limit-length {
				return nil, fmt.Errorf("%w: row group %d column %q claims bytes [%d, %d+%d), outside the data area [4, %d) of the %d-byte object",
					ErrCorrupt, i, f.Columns[j], start, start, length, dataEnd, size)
			}
			path := cc.PathInSchema().String()
			if path != f.Columns[j] {
				return nil, fmt.Errorf("%w: row group %d column %d is %q, the schema says %q", ErrCorrupt, i, j, path, f.Columns[j])
			}
			rg.Columns = append(rg.Columns, ColumnChunk{
				Path:      path,
				Offset:    start,
				Length:    length,
				NumValues: cc.NumValues(),
				Codec:     strings.ToUpper(cc.Compression().String()),
			})
			if lo < 0 || start < lo {
				lo = start
			}
			hi = max(hi, start+length)
		}
		if lo < 0 { // no columns
			lo, hi = int64(len(magic)), int64(len(magic))
		}
		rg.Offset, rg.Length = lo, hi-lo
		if rg.NumRows > 0 && rg.Length == 0 && len(rg.Columns) > 0 {
			// Rows need bytes (a chunk holding values has at least a page
			// header); a split of rows in no bytes cannot be placed.
			return nil, fmt.Errorf("%w: row group %d claims %d rows in 0 bytes", ErrCorrupt, i, rg.NumRows)
		}
		f.RowGroups = append(f.RowGroups, rg)
	}
	if sumRows != f.NumRows {
		return nil, fmt.Errorf("%w: row groups hold %d rows, the file says %d", ErrCorrupt, sumRows, f.NumRows)
	}
	return f, nil
}

// IsParquetName reports whether a URI or path ends in a Parquet file name
// extension (".parquet" or ".parq", any case). Hive writes Parquet files
// without an extension; use Sniff for those.
func IsParquetName(uri string) bool {
	l := strings.ToLower(uri)
	return strings.HasSuffix(l, ".parquet") || strings.HasSuffix(l, ".parq")
}

// Sniff reports whether the object r of the given size looks like Parquet:
// "PAR1" (or "PARE", encrypted) at both ends. It reads 8 bytes.
func Sniff(r io.ReaderAt, size int64) (bool, error) {
	if size < int64(len(magic))+trailerSize {
		return false, nil
	}
	head := make([]byte, 4)
	if err := readFull(r, head, 0); err != nil {
		return false, fmt.Errorf("parquetx: cannot read the magic: %w", err)
	}
	tail := make([]byte, 4)
	if err := readFull(r, tail, size-4); err != nil {
		return false, fmt.Errorf("parquetx: cannot read the magic: %w", err)
	}
	isMagic := func(b []byte) bool { return bytes.Equal(b, magic) || bytes.Equal(b, magicEncrypted) }
	return isMagic(head) && isMagic(tail), nil
}
