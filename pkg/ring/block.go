package ring

import (
	"fmt"
	"math"
	"strconv"
)

// BlockKey returns the ring key of block index block of the object uri:
// uri + "#" + the decimal index, as DESIGN.md fixes it ("s3://b/k#3"). The
// object's version is not part of the key, so ownership survives a rewrite.
// Block i covers bytes [i*B, (i+1)*B) for the cluster block size B; callers
// pass i >= 0.
func BlockKey(uri string, block int64) string {
	return string(AppendBlockKey(make([]byte, 0, len(uri)+21), uri, block))
}

// AppendBlockKey appends BlockKey(uri, block) to dst, for callers that reuse
// a buffer.
func AppendBlockKey(dst []byte, uri string, block int64) []byte {
	dst = append(dst, uri...)
	dst = append(dst, '#')
	return strconv.AppendInt(dst, block, 10)
}

// PlacementBlock returns the placement block of a split [offset,
// offset+length): the index of the block holding most of its bytes, with
// blocks of blockSize bytes. On a tie the lower block index wins: a split of
// two equal halves belongs to its first block, and a split covering several
// whole blocks belongs to the first whole one (or the first block, if that
// one is whole too).
//
// This function is the only place the rule lives: cache nodes, the
// scheduler and clients all call it (through PlacementKey), so they agree on
// where a split's task runs and which node caches its bytes.
//
// Errors: ErrNegativeOffset, ErrBadLength (length <= 0), ErrBadBlockSize
// (blockSize <= 0), ErrOverflow (offset+length > math.MaxInt64).
func PlacementBlock(offset, length, blockSize int64) (int64, error) {
	switch {
	case offset < 0:
		return 0, fmt.Errorf("%w: offset %d", ErrNegativeOffset, offset)
	case length <= 0:
		return 0, fmt.Errorf("%w: length %d", ErrBadLength, length)
	case blockSize <= 0:
		return 0, fmt.Errorf("%w: block size %d", ErrBadBlockSize, blockSize)
	case offset > math.MaxInt64-length:
		return 0, fmt.Errorf("%w: offset %d + length %d", ErrOverflow, offset, length)
	}
	end := offset + length // exclusive; fits, checked above
	first, last := offset/blockSize, (end-1)/blockSize
	if first == last {
		return first, nil
	}
	// The split starts in block first, ends in block last, and covers the
	// blocks in between whole. (first+1)*blockSize <= last*blockSize <=
	// end-1, so none of these products overflows.
	best, bestBytes := first, (first+1)*blockSize-offset
	if last-first >= 2 && blockSize > bestBytes {
		best, bestBytes = first+1, blockSize
	}
	if lastBytes := end - last*blockSize; lastBytes > bestBytes {
		best = last
	}
	return best, nil
}

// PlacementKey returns the ring key a split is placed by: BlockKey(uri,
// PlacementBlock(offset, length, blockSize)). Errors: ErrEmptyURI and those
// of PlacementBlock.
func PlacementKey(uri string, offset, length, blockSize int64) (string, error) {
	if uri == "" {
		return "", ErrEmptyURI
	}
	b, err := PlacementBlock(offset, length, blockSize)
	if err != nil {
		return "", err
	}
	return BlockKey(uri, b), nil
}
