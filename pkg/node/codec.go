package node

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

// The bulk path of a ReadRange stream copies every byte several times in
// gRPC: into the marshalled message, into HTTP/2 frames, through the
// socket, into frame buffers, into one contiguous message, into the
// unmarshalled Chunk. Two things here cut that down, without changing the
// wire format (clients using the stock codec interoperate):
//
//   - bufferPool: a buffer pool that does not zero buffers it hands out
//     (gRPC's default pool clears every buffer, a memclr per byte sent and
//     received); every buffer is written before it is read.
//   - Codec: gRPC's proto codec, marshalling into that pool, plus a
//     zero-copy decoder for RawResponse: a chunk's data is handed out as
//     the received frame buffers themselves, referenced until Release,
//     instead of being copied twice.

// bufferPool is a mem.BufferPool of power-of-two size classes from 256
// bytes to 4 MiB whose buffers are not zeroed. Larger requests are
// allocated.
type bufferPool struct {
	tiers [15]sync.Pool // 2^8 .. 2^22
}

const (
	minTier = 8
	maxTier = minTier + 14
)

var pool = &bufferPool{}

func (p *bufferPool) Get(n int) *[]byte {
	t := max(minTier, bits.Len(uint(max(n, 1)-1)))
	if t > maxTier {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t-minTier].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<t)
	return &b
}

func (p *bufferPool) Put(b *[]byte) {
	c := cap(*b)
	t := bits.Len(uint(c)) - 1
	if c != 1<<t || t < minTier || t > maxTier {
		return
	}
	p.tiers[t-minTier].Put(b)
}

// Codec is the gRPC codec ("proto") cache nodes use on both ends. It
// encodes and decodes protobuf messages like gRPC's own, and decodes a
// ReadRange response into a *RawResponse without copying chunk data.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// Name is "proto": the codec changes no byte on the wire.
func (Codec) Name() string { return "proto" }

// Marshal implements encoding.CodecV2.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	if c, ok := v.(*aliasChunk); ok {
		return c.marshal(), nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("node codec: cannot marshal %T", v)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true}
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := pool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// Unmarshal implements encoding.CodecV2.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*RawResponse); ok {
		return r.decode(data)
	}
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("node codec: cannot unmarshal into %T", v)
	}
	buf := data.MaterializeToBuffer(pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// RawResponse receives one ReadRangeResponse without copying its chunk
// data: pass it to RecvMsg of a ReadRange stream opened with the Codec
// (grpc.ForceCodecV2(node.Codec{})). After RecvMsg, either Summary is set,
// or Offset and Data describe a chunk. Data's slices point into gRPC's
// receive buffers: they stay valid until Release (or the next RecvMsg into
// the same RawResponse) and must not be modified.
type RawResponse struct {
	// Offset is the chunk's offset in the object.
	Offset int64
	// Data is the chunk's bytes, in pieces.
	Data [][]byte
	// Summary is set for the final message (then Data is empty).
	Summary *cachev1.ReadSummary

	refs mem.BufferSlice
}

// Len returns the number of bytes in Data.
func (r *RawResponse) Len() int {
	n := 0
	for _, d := range r.Data {
		n += len(d)
	}
	return n
}

// Release drops the references to gRPC's buffers.
func (r *RawResponse) Release() {
	r.refs.Free()
	r.refs = r.refs[:0]
	clear(r.Data)
	r.Data = r.Data[:0]
	r.Summary = nil
	r.Offset = 0
}

// decode parses a ReadRangeResponse. A chunk laid out as the generated code
// writes it (offset, then data, no other field) is decoded in place; any
// other message is decoded by proto.Unmarshal.
func (r *RawResponse) decode(data mem.BufferSlice) error {
	r.Release()
	total := data.Len()
	var head [40]byte
	h := head[:min(len(head), total)]
	copyPrefix(h, data)
	if off, start, n, ok := parseChunkHeader(h, total); ok {
		r.Offset = off
		skip, left := start, n
		for _, b := range data {
			d := b.ReadOnlyData()
			if skip >= len(d) {
				skip -= len(d)
				continue
			}
			d = d[skip:]
			skip = 0
			if len(d) > left {
				d = d[:left]
			}
			if len(d) > 0 {
				b.Ref()
				r.refs = append(r.refs, b)
				r.Data = append(r.Data, d)
				left -= len(d)
			}
			if left == 0 {
				break
			}
		}
		return nil
	}
	var m cachev1.ReadRangeResponse
	buf := data.MaterializeToBuffer(pool)
	defer buf.Free()
	if err := proto.Unmarshal(buf.ReadOnlyData(), &m); err != nil {
		return err
	}
	switch x := m.Msg.(type) {
	case *cachev1.ReadRangeResponse_Summary:
		r.Summary = x.Summary
	case *cachev1.ReadRangeResponse_Chunk:
		r.Offset = x.Chunk.GetOffset()
		if d := x.Chunk.GetData(); len(d) > 0 {
			r.Data = append(r.Data, d)
		}
	default:
		return fmt.Errorf("node codec: empty ReadRangeResponse")
	}
	return nil
}

func copyPrefix(dst []byte, data mem.BufferSlice) {
	n := 0
	for _, b := range data {
		n += copy(dst[n:], b.ReadOnlyData())
		if n == len(dst) {
			return
		}
	}
}

// parseChunkHeader recognises a ReadRangeResponse{chunk: {offset, data}} of
// total bytes whose first bytes are h, laid out as field 1 (chunk), inside
// it optional field 1 (offset) then field 2 (data) ending the message. It
// returns the offset and where the data starts and how long it is.
func parseChunkHeader(h []byte, total int) (offset int64, start, n int, ok bool) {
	num, typ, k := protowire.ConsumeTag(h)
	if k < 0 || num != 1 || typ != protowire.BytesType {
		return 0, 0, 0, false
	}
	p := k
	clen, k := protowire.ConsumeVarint(h[p:])
	if k < 0 || uint64(total-p-k) != clen {
		return 0, 0, 0, false
	}
	p += k
	num, typ, k = protowire.ConsumeTag(h[p:])
	if k < 0 {
		return 0, 0, 0, false
	}
	if num == 1 && typ == protowire.VarintType {
		p += k
		v, k := protowire.ConsumeVarint(h[p:])
		if k < 0 {
			return 0, 0, 0, false
		}
		offset = int64(v)
		p += k
		num, typ, k = protowire.ConsumeTag(h[p:])
		if k < 0 {
			return 0, 0, 0, false
		}
	}
	if num != 2 || typ != protowire.BytesType {
		return 0, 0, 0, false
	}
	p += k
	dlen, k := protowire.ConsumeVarint(h[p:])
	if k < 0 {
		return 0, 0, 0, false
	}
	p += k
	if uint64(total-p) != dlen {
		return 0, 0, 0, false
	}
	return offset, p, int(dlen), true
}

// aliasMin is the smallest chunk sent without copying (below it the copy
// is cheaper than the hand-off, and gRPC does not pool such buffers).
const aliasMin = 4 << 10

// aliasChunk is a ReadRangeResponse chunk whose data the codec does not
// copy: Marshal encodes the few header bytes and wraps data itself in a
// gRPC buffer whose release (gRPC's writer has copied it into the
// connection's write buffer) signals done. The sender must keep data valid
// until then: the server's ReadRange waits for done before returning from
// the cache's View callback, which keeps the page pinned.
type aliasChunk struct {
	offset int64
	data   []byte
	done   chan struct{} // capacity 1
}

// aliasGrace bounds the wait for gRPC to release an aliased chunk once the
// stream is over. gRPC frees queued data when a stream is cleaned up or its
// connection closes, so the wait normally ends at once.
const aliasGrace = 5 * time.Second

// errChunkKept: gRPC did not release an aliased chunk within aliasGrace
// of the stream's end.
var errChunkKept = errors.New("node: chunk not released by gRPC")

// wait waits until gRPC has released the chunk's data. Returning early
// would let the cache reuse the page gRPC still reads, so a finished stream
// still waits for the release, up to aliasGrace. When the stream ended
// (the client went away) it returns ctx's error, wrapped in errChunkKept
// as well if gRPC kept the chunk past the grace.
func (c *aliasChunk) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
	}
	t := time.NewTimer(aliasGrace)
	defer t.Stop()
	select {
	case <-c.done:
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%w within %v: %w", errChunkKept, aliasGrace, ctx.Err())
	}
}

// signalPool is the "pool" an aliased buffer returns to: Put signals.
type signalPool struct{ done chan struct{} }

func (p signalPool) Get(n int) *[]byte { b := make([]byte, n); return &b }
func (p signalPool) Put(*[]byte) {
	select {
	case p.done <- struct{}{}:
	default:
	}
}

func (c *aliasChunk) marshal() mem.BufferSlice {
	dl := len(c.data)
	inner := 1 + protowire.SizeVarint(uint64(dl)) + dl
	if c.offset != 0 {
		inner += 1 + protowire.SizeVarint(uint64(c.offset))
	}
	hdr := make([]byte, 0, 32)
	hdr = protowire.AppendTag(hdr, 1, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(inner))
	if c.offset != 0 {
		hdr = protowire.AppendTag(hdr, 1, protowire.VarintType)
		hdr = protowire.AppendVarint(hdr, uint64(c.offset))
	}
	hdr = protowire.AppendTag(hdr, 2, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(dl))
	d := c.data
	return mem.BufferSlice{mem.SliceBuffer(hdr), mem.NewBuffer(&d, signalPool{c.done})}
}
