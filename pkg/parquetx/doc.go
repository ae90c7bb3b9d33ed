// Package parquetx knows just enough about Parquet for a cache to be
// useful to Parquet readers: where a file's row groups and column chunks
// lie, so the page cache can prefetch exactly the bytes a task will read,
// and how to cut a table into splits, one per row group.
//
// # A Parquet file, from the cache's point of view
//
//	"PAR1" | row group 0: chunk(col 0) chunk(col 1) ... | row group 1: ... | [page indexes] | footer | len(footer) u32 LE | "PAR1"
//
// The footer (Thrift FileMetaData) says, for each row group and each leaf
// column, where the column chunk starts and how many bytes it takes. A
// chunk starts at its dictionary page if it has one, else at its first
// data page, and spans total_compressed_size bytes. ReadFooter reads the
// footer with one ranged read of the object's tail (DefaultTailSize; a
// second read only for larger footers) and returns a Footer with those
// ranges checked against the object's size: a footer whose ranges do not
// fit is ErrCorrupt, never a range the cache would fetch blindly.
//
// # From footer to bytes
//
//   - Footer.RowGroups[i].Range(): the bytes of one row group.
//   - ChunkRanges(footer, rowGroups, columns, gap): the merged ranges of the
//     chosen column chunks, what to prefetch before a task that reads those
//     columns. Columns are dotted leaf paths ("point.x",
//     "tags.list.element"); naming a struct or list selects its leaves.
//   - Footer.FooterRange(): the footer itself.
//
// These ranges are sufficient: arrow-go reads a row group through a reader
// that serves nothing else (tested, with and without dictionary encoding,
// nested columns and page indexes).
//
// # Split planning
//
// PlanSplits turns one footer into one Split (uri, offset, length) per row
// group. ListParquet finds Parquet objects under an s3:// or file:// prefix
// through any origin.Store, skipping Hadoop's hidden files (_SUCCESS,
// .crc, _temporary/); Plan does both, reading footers in parallel through
// an optional FooterCache.
//
// # Footer cache
//
// FooterCache keeps parsed footers keyed by (URI, version). A footer never
// changes for a version, so entries are never revalidated; the cache is
// bounded by entry count and by an estimate of the footers' memory, and
// concurrent misses for one key share a single read.
//
// # Reading with arrow-go over anything
//
// OpenFile opens arrow-go's Parquet reader over any io.ReaderAt plus a
// size: an *os.File, an origin.ReaderAt, or the client's cache-backed
// reader, reusing an already parsed Footer.
//
// # Hostile input
//
// Bad input returns errors wrapping ErrNotParquet, ErrCorrupt, ErrEncrypted
// or ErrUnsupported, never a panic: panics inside arrow-go while parsing
// or opening are recovered and reported as ErrCorrupt. Before arrow-go
// sees a footer, a linear walk of its Thrift encoding rejects declared
// sizes larger than the bytes present, because the Thrift library
// otherwise allocates whatever a corrupt length claims (hundreds of MB for
// a 10-byte footer). The parser is fuzzed (FuzzFooterMetadata,
// FuzzReadFooter).
//
// Every function here is safe for concurrent use; a Footer is immutable.
package parquetx
