package cache

import (
	"encoding/binary"
	"hash/crc32"
)

// On-disk format. A slab file is
//
//	[superblock: 4 KiB][headers: nslots x 512 B, padded to 4 KiB][data: nslots x slotSize]
//
// Slot j's header lives at hdrOff + j*headerSize and its data at
// dataOff + j*slotSize. Headers are packed together so that a restart reads
// them sequentially (1M pages: 512 MB of headers, not 1M scattered reads).
//
// A page header (little endian):
//
//	0  magic   u32 "LCPG"
//	4  hcrc    u32 crc32c of bytes 8..512
//	8  format  u16
//	10 uriLen  u16
//	12 verLen  u16
//	14 (zero)  u16
//	16 seq     u64 write sequence: the newest copy of a key wins at restart
//	24 size    i64 object size
//	32 page    i64 page index
//	40 length  u32 data length
//	44 dcrc    u32 crc32c of the data
//	48 uri, then version (at most maxKeyBytes together)
//
// A slot's header is zeroed before its data is overwritten and written only
// after the data is complete, so at any instant a valid header describes
// data that was completely written (a process crash keeps every write that
// returned: they are in the kernel's page cache).
const (
	superSize     = 4096
	headerSize    = 512
	headerFixed   = 48
	maxKeyBytes   = headerSize - headerFixed
	pageMagic     = 0x4750434c // "LCPG"
	headerFormat  = 1
	superMagic    = "LOCUSSLB"
	superFormat   = 1
	superUsedSize = 52
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// pageHeader is a page header. decodeHeader leaves uri and version empty
// and returns them as slices of its buffer instead.
type pageHeader struct {
	uri, version string
	seq          uint64
	size         int64
	page         int64
	length       uint32
	crc          uint32
}

// encodeHeader writes h into b (len headerSize). The key must fit.
func encodeHeader(b []byte, h *pageHeader) {
	clear(b[:headerSize])
	le := binary.LittleEndian
	le.PutUint32(b[0:], pageMagic)
	le.PutUint16(b[8:], headerFormat)
	le.PutUint16(b[10:], uint16(len(h.uri)))
	le.PutUint16(b[12:], uint16(len(h.version)))
	le.PutUint64(b[16:], h.seq)
	le.PutUint64(b[24:], uint64(h.size))
	le.PutUint64(b[32:], uint64(h.page))
	le.PutUint32(b[40:], h.length)
	le.PutUint32(b[44:], h.crc)
	n := copy(b[headerFixed:], h.uri)
	copy(b[headerFixed+n:], h.version)
	le.PutUint32(b[4:], checksum(b[8:headerSize]))
}

// decodeHeader parses b (len headerSize). ok is false for a free slot, a
// torn or corrupt header, or an impossible one.
func decodeHeader(b []byte, pageSize int) (h pageHeader, uri, version []byte, ok bool) {
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != pageMagic || le.Uint32(b[4:]) != checksum(b[8:headerSize]) ||
		le.Uint16(b[8:]) != headerFormat {
		return h, nil, nil, false
	}
	ul, vl := int(le.Uint16(b[10:])), int(le.Uint16(b[12:]))
	if ul == 0 || ul+vl > maxKeyBytes {
		return h, nil, nil, false
	}
	uri = b[headerFixed : headerFixed+ul]
	version = b[headerFixed+ul : headerFixed+ul+vl]
	h.seq = le.Uint64(b[16:])
	h.size = int64(le.Uint64(b[24:]))
	h.page = int64(le.Uint64(b[32:]))
	h.length = le.Uint32(b[40:])
	h.crc = le.Uint32(b[44:])
	// An object of more than maxObjectPages pages is read straight through,
	// never cached, so a header naming one is not ours (and its page index
	// would not fit the index's 32 bits).
	if h.size < 0 || h.page < 0 || h.page >= numPages(h.size, pageSize) ||
		numPages(h.size, pageSize) > maxObjectPages ||
		int64(h.length) != int64(pageLen(h.size, pageSize, h.page)) {
		return h, nil, nil, false
	}
	return h, uri, version, true
}

// slabGeometry is the layout of one slab file.
type slabGeometry struct {
	nslots   int
	slotSize int
	hdrOff   int64
	dataOff  int64
	fileSize int64
}

func slotSizeFor(pageSize int) int {
	align := 4096
	if pageSize < align {
		align = 512
	}
	return (pageSize + align - 1) / align * align
}

func roundUp(n, a int64) int64 { return (n + a - 1) / a * a }

// geometryFor returns the largest layout with at most budget bytes, or
// nslots 0 when not even one slot fits. The file's size is a whole number
// of 4 KiB blocks: the file system allocates whole blocks, so a shorter
// file would take more of the disk than its length (pages under 4 KiB
// have 512-byte slots).
func geometryFor(budget int64, pageSize int) slabGeometry {
	ss := slotSizeFor(pageSize)
	size := func(n int64) int64 { return roundUp(superSize+roundUp(n*headerSize, 4096)+n*int64(ss), 4096) }
	n := (budget - superSize) / int64(headerSize+ss)
	for n > 0 && size(n) > budget {
		n--
	}
	if n <= 0 {
		return slabGeometry{slotSize: ss}
	}
	return slabGeometry{
		nslots:   int(n),
		slotSize: ss,
		hdrOff:   superSize,
		dataOff:  superSize + roundUp(n*headerSize, 4096),
		fileSize: size(n),
	}
}

func encodeSuper(b []byte, g slabGeometry, pageSize int) {
	clear(b[:superSize])
	le := binary.LittleEndian
	copy(b, superMagic)
	le.PutUint32(b[8:], superFormat)
	le.PutUint32(b[12:], uint32(pageSize))
	le.PutUint32(b[16:], uint32(g.slotSize))
	le.PutUint32(b[20:], uint32(g.nslots))
	le.PutUint64(b[24:], uint64(g.hdrOff))
	le.PutUint64(b[32:], uint64(g.dataOff))
	le.PutUint64(b[40:], uint64(g.fileSize))
	le.PutUint32(b[48:], checksum(b[:48]))
}

// superMatches reports whether b is a valid superblock for g and pageSize.
func superMatches(b []byte, g slabGeometry, pageSize int) bool {
	var want [superSize]byte
	encodeSuper(want[:], g, pageSize)
	return string(b[:superUsedSize]) == string(want[:superUsedSize])
}
