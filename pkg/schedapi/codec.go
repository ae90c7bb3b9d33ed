package schedapi

import (
	"encoding/json"
	"strconv"
)

// Client side of the codec, for the batch calls (pkg/client): the request
// encoders write what json.Marshal writes, and the answer decoders take the
// fast path of fastjson.go for the plain form the scheduler writes, falling
// back to encoding/json (which ignores unknown fields, so answers may grow
// fields) for anything else.

// AppendPlaceBatchRequest appends the JSON of r (as json.Marshal writes it).
func AppendPlaceBatchRequest(dst []byte, r *PlaceBatchRequest) []byte {
	dst = append(dst, `{"job":`...)
	dst = appendString(dst, r.Job)
	dst = append(dst, `,"tasks":`...)
	dst = appendList(dst, r.Tasks == nil, len(r.Tasks), func(dst []byte, i int) []byte {
		t := &r.Tasks[i]
		dst = append(dst, `{"task":`...)
		dst = appendString(dst, t.Task)
		dst = append(dst, `,"split":{"uri":`...)
		dst = appendString(dst, t.Split.URI)
		dst = append(dst, `,"offset":`...)
		dst = strconv.AppendInt(dst, t.Split.Offset, 10)
		dst = append(dst, `,"length":`...)
		dst = strconv.AppendInt(dst, t.Split.Length, 10)
		return append(dst, "}}"...)
	})
	dst = append(dst, `,"wait_ms":`...)
	dst = strconv.AppendInt(dst, r.WaitMS, 10)
	return append(dst, '}')
}

// appendList appends a JSON array of n elements written by elem, or null
// for a nil slice (as json.Marshal writes them).
func appendList(dst []byte, isNil bool, n int, elem func(dst []byte, i int) []byte) []byte {
	if isNil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = elem(dst, i)
	}
	return append(dst, ']')
}

// AppendCompleteBatchRequest appends the JSON of r (as json.Marshal writes
// it).
func AppendCompleteBatchRequest(dst []byte, r *CompleteBatchRequest) []byte {
	dst = append(dst, `{"job":`...)
	dst = appendString(dst, r.Job)
	dst = append(dst, `,"tasks":`...)
	dst = appendList(dst, r.Tasks == nil, len(r.Tasks), func(dst []byte, i int) []byte {
		t := &r.Tasks[i]
		dst = append(dst, `{"task":`...)
		dst = appendString(dst, t.Task)
		for _, f := range [...]struct {
			name string
			v    int64
		}{{"bytes", t.Bytes}, {"local_hit_bytes", t.LocalHitBytes}, {"peer_hit_bytes", t.PeerHitBytes}, {"miss_bytes", t.MissBytes}, {"duration_ms", t.DurationMS}} {
			dst = appendKey(dst, false, f.name)
			dst = strconv.AppendInt(dst, f.v, 10)
		}
		return append(dst, '}')
	})
	return append(dst, '}')
}

// uint64 reads a non-negative integer within uint64.
func (l *lexer) uint64() uint64 {
	l.ws()
	start := l.i
	for l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '9' {
		l.i++
	}
	n := l.i - start
	if n == 0 || n > 1 && l.b[start] == '0' || l.i < len(l.b) && (l.b[l.i] == '.' || l.b[l.i] == 'e' || l.b[l.i] == 'E') {
		l.bad = true
		return 0
	}
	v, err := strconv.ParseUint(string(l.b[start:l.i]), 10, 64)
	if err != nil {
		l.bad = true
	}
	return v
}

// placement reads a Placement object; repeated strings of the answer
// (node, addresses, rack, locality, owner) share one copy through intern.
func (l *lexer) placement(p *Placement, intern map[string]string) {
	str := func() string {
		raw := l.rawString()
		if l.bad {
			return ""
		}
		if s, ok := intern[string(raw)]; ok {
			return s
		}
		s := string(raw)
		intern[s] = s
		return s
	}
	l.object(func(k []byte) int {
		switch string(k) {
		case "task":
			p.Task = l.str()
			return 0
		case "node":
			p.Node = str()
			return 1
		case "address":
			p.Address = str()
			return 2
		case "http_address":
			p.HTTPAddress = str()
			return 3
		case "rack":
			p.Rack = str()
			return 4
		case "locality":
			p.Locality = str()
			return 5
		case "owner":
			p.Owner = str()
			return 6
		case "ring_epoch":
			p.RingEpoch = l.uint64()
			return 7
		case "waited_ms":
			p.WaitedMS = l.int64()
			return 8
		case "error":
			p.Error = str()
			return 9
		}
		return -1
	})
}

// DecodePlaceBatchResponse decodes the answer to POST /v1/place/batch.
func DecodePlaceBatchResponse(b []byte) (PlaceBatchResponse, error) {
	var r PlaceBatchResponse
	l := lexer{b: b}
	intern := map[string]string{}
	l.object(func(k []byte) int {
		if string(k) != "placements" {
			return -1
		}
		r.Placements = make([]Placement, 0, len(b)/160)
		l.array(func() {
			var p Placement
			l.placement(&p, intern)
			r.Placements = append(r.Placements, p)
		})
		return 0
	})
	if l.end() {
		return r, nil
	}
	r = PlaceBatchResponse{}
	err := json.Unmarshal(b, &r)
	return r, err
}

// DecodeCompleteBatchResponse decodes the answer to POST
// /v1/complete/batch.
func DecodeCompleteBatchResponse(b []byte) (CompleteBatchResponse, error) {
	var r CompleteBatchResponse
	l := lexer{b: b}
	locs := map[string]string{}
	l.object(func(k []byte) int {
		if string(k) != "results" {
			return -1
		}
		r.Results = make([]CompleteResult, 0, len(b)/64)
		l.array(func() {
			var x CompleteResult
			l.object(func(k []byte) int {
				switch string(k) {
				case "task":
					x.Task = l.str()
					return 0
				case "locality":
					raw := l.rawString()
					if s, ok := locs[string(raw)]; ok {
						x.Locality = s
					} else if !l.bad {
						x.Locality = string(raw)
						locs[x.Locality] = x.Locality
					}
					return 1
				case "error":
					x.Error = l.str()
					return 2
				case "status":
					x.Status = int(l.int64())
					return 3
				case "code":
					x.Code = l.str()
					return 4
				}
				return -1
			})
			r.Results = append(r.Results, x)
		})
		return 0
	})
	if l.end() {
		return r, nil
	}
	r = CompleteBatchResponse{}
	err := json.Unmarshal(b, &r)
	return r, err
}
