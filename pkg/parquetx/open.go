package parquetx

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// OpenFile opens arrow-go's Parquet reader over any io.ReaderAt of the
// given size: an *os.File, an origin.ReaderAt, or the client's cached
// reader. If footer is non-nil (from ReadFooter or a FooterCache) its
// parsed metadata is reused and the footer is not read again. props may be
// nil for arrow-go's defaults.
//
// Wrap the result with pqarrow.NewFileReader to read Arrow tables. arrow-go
// issues a ReadAt per column chunk it reads (plus, when the file has page
// indexes and they are used, their ranges), so a reader that serves
// ChunkRanges and FooterRange is sufficient for a row group.
//
// A panic inside arrow-go while opening is converted into an error
// wrapping ErrCorrupt; panics while later reading column data are the
// caller's to guard.
func OpenFile(r io.ReaderAt, size int64, footer *Footer, props *parquet.ReaderProperties) (rdr *file.Reader, err error) {
	if footer != nil && footer.Size != size {
		return nil, fmt.Errorf("parquetx: OpenFile: footer is of a %d-byte object, reader has %d bytes", footer.Size, size)
	}
	defer func() {
		if r := recover(); r != nil {
			rdr, err = nil, fmt.Errorf("%w: arrow-go panicked while opening: %v", ErrCorrupt, r)
		}
	}()
	var opts []file.ReadOption
	if props != nil {
		opts = append(opts, file.WithReadProps(props))
	}
	if footer == nil {
		// Parse the footer ourselves: same checks and errors as ReadFooter,
		// and one ranged read instead of arrow-go's two.
		footer, err = ReadFooter(r, size)
		if err != nil {
			return nil, err
		}
	}
	opts = append(opts, file.WithMetadata(footer.meta))
	rdr, err = file.NewParquetReader(io.NewSectionReader(r, 0, size), opts...)
	if err != nil {
		return nil, fmt.Errorf("parquetx: cannot open the Parquet reader: %w", err)
	}
	return rdr, nil
}
