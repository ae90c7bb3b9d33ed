package schedapi

import (
	"strconv"
	"unicode/utf8"
)

// A fast path for the JSON of the hot calls (place, place batch, complete,
// complete batch), which encoding/json decodes at about 100 MB/s with
// reflection: at a 1000-task batch that was most of the scheduler's time.
//
// The decoders accept only the plain form of a request, the form every
// JSON encoder writes: an object whose keys are exactly the field names
// (each at most once), strings without escapes, integers without fraction
// or exponent. On anything else (an escape, a key in another case, an
// unknown or repeated key, null, a float, bad syntax, trailing data) they
// give up and the caller decodes with encoding/json, which then accepts or
// refuses the body with its usual error. So the fast path never changes
// what a body means: whenever it accepts, encoding/json gives the same
// value (FuzzFastDecode checks this).
//
// The encoders write exactly the bytes encoding/json's Encoder writes for
// the answer types (TestFastEncode checks this).

// lexer reads JSON tokens from b; any failure sets bad, and every later
// call then fails too.
type lexer struct {
	b   []byte
	i   int
	bad bool
}

func (l *lexer) ws() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte (0 at the end).
func (l *lexer) peek() byte {
	l.ws()
	if l.bad || l.i >= len(l.b) {
		return 0
	}
	return l.b[l.i]
}

func (l *lexer) expect(c byte) {
	if l.peek() != c {
		l.bad = true
		return
	}
	l.i++
}

// rawString reads a string without escapes or control characters, in valid
// UTF-8, and returns its bytes (aliasing b).
func (l *lexer) rawString() []byte {
	l.expect('"')
	if l.bad {
		return nil
	}
	start := l.i
	ascii := true
	for ; l.i < len(l.b); l.i++ {
		c := l.b[l.i]
		switch {
		case c == '"':
			s := l.b[start:l.i]
			l.i++
			if !ascii && !utf8.Valid(s) {
				l.bad = true
				return nil
			}
			return s
		case c == '\\' || c < 0x20:
			l.bad = true
			return nil
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	l.bad = true
	return nil
}

func (l *lexer) str() string {
	s := l.rawString()
	if l.bad {
		return ""
	}
	return string(s)
}

// int64 reads an integer: -?(0|[1-9][0-9]*) with no fraction or exponent,
// within int64.
func (l *lexer) int64() int64 {
	l.ws()
	start := l.i
	if l.i < len(l.b) && l.b[l.i] == '-' {
		l.i++
	}
	digits := l.i
	for l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '9' {
		l.i++
	}
	n := l.i - digits
	if n == 0 || n > 1 && l.b[digits] == '0' {
		l.bad = true
		return 0
	}
	if l.i < len(l.b) {
		switch l.b[l.i] {
		case '.', 'e', 'E':
			l.bad = true
			return 0
		}
	}
	v, err := strconv.ParseInt(string(l.b[start:l.i]), 10, 64)
	if err != nil {
		l.bad = true
		return 0
	}
	return v
}

// object reads an object, calling field with each key (which must be new
// in this object: seen bits by the index field returns) until the closing
// brace. field reads the value and returns the key's index, or -1 for a
// key it does not know (which fails the lexer).
func (l *lexer) object(field func(key []byte) int) {
	l.expect('{')
	if l.peek() == '}' {
		l.i++
		return
	}
	var seen uint64
	for !l.bad {
		key := l.rawString()
		l.expect(':')
		if l.bad {
			return
		}
		idx := field(key)
		if idx < 0 || seen&(1<<idx) != 0 {
			l.bad = true
			return
		}
		seen |= 1 << idx
		switch l.peek() {
		case ',':
			l.i++
		case '}':
			l.i++
			return
		default:
			l.bad = true
		}
	}
}

// array reads an array, calling elem for each element.
func (l *lexer) array(elem func()) {
	l.expect('[')
	if l.peek() == ']' {
		l.i++
		return
	}
	for !l.bad {
		elem()
		switch l.peek() {
		case ',':
			l.i++
		case ']':
			l.i++
			return
		default:
			l.bad = true
		}
	}
}

// end checks that only white space is left.
func (l *lexer) end() bool {
	l.ws()
	return !l.bad && l.i == len(l.b)
}

func (l *lexer) split(s *Split) {
	l.object(func(k []byte) int {
		switch string(k) {
		case "uri":
			s.URI = l.str()
			return 0
		case "offset":
			s.Offset = l.int64()
			return 1
		case "length":
			s.Length = l.int64()
			return 2
		}
		return -1
	})
}

// fastPlace decodes a place request; ok is false when the body needs
// encoding/json.
func fastPlace(b []byte) (r PlaceRequest, ok bool) {
	l := lexer{b: b}
	l.object(func(k []byte) int {
		switch string(k) {
		case "job":
			r.Job = l.str()
			return 0
		case "task":
			r.Task = l.str()
			return 1
		case "split":
			l.split(&r.Split)
			return 2
		case "wait_ms":
			r.WaitMS = l.int64()
			return 3
		}
		return -1
	})
	return r, l.end()
}

// fastPlaceBatch decodes a batch request (see fastPlace). URIs repeated in
// the batch share one string.
func fastPlaceBatch(b []byte) (r PlaceBatchRequest, ok bool) {
	l := lexer{b: b}
	uris := map[string]string{}
	l.object(func(k []byte) int {
		switch string(k) {
		case "job":
			r.Job = l.str()
			return 0
		case "tasks":
			r.Tasks = make([]BatchTask, 0, len(b)/128)
			l.array(func() {
				var t BatchTask
				l.object(func(k []byte) int {
					switch string(k) {
					case "task":
						t.Task = l.str()
						return 0
					case "split":
						l.object(func(k []byte) int {
							switch string(k) {
							case "uri":
								raw := l.rawString()
								if u, ok := uris[string(raw)]; ok {
									t.Split.URI = u
								} else if !l.bad {
									t.Split.URI = string(raw)
									uris[t.Split.URI] = t.Split.URI
								}
								return 0
							case "offset":
								t.Split.Offset = l.int64()
								return 1
							case "length":
								t.Split.Length = l.int64()
								return 2
							}
							return -1
						})
						return 1
					}
					return -1
				})
				r.Tasks = append(r.Tasks, t)
			})
			return 1
		case "wait_ms":
			r.WaitMS = l.int64()
			return 2
		}
		return -1
	})
	return r, l.end()
}

// outcomeField reads one of the outcome fields shared by complete and
// complete batch into the pointers; it returns the field index (base+0..4)
// or -1.
func (l *lexer) outcomeField(k []byte, base int, bytes, local, peer, miss, dur *int64) int {
	switch string(k) {
	case "bytes":
		*bytes = l.int64()
		return base
	case "local_hit_bytes":
		*local = l.int64()
		return base + 1
	case "peer_hit_bytes":
		*peer = l.int64()
		return base + 2
	case "miss_bytes":
		*miss = l.int64()
		return base + 3
	case "duration_ms":
		*dur = l.int64()
		return base + 4
	}
	return -1
}

// fastComplete decodes a complete request (see fastPlace).
func fastComplete(b []byte) (r CompleteRequest, ok bool) {
	l := lexer{b: b}
	l.object(func(k []byte) int {
		switch string(k) {
		case "job":
			r.Job = l.str()
			return 0
		case "task":
			r.Task = l.str()
			return 1
		}
		return l.outcomeField(k, 2, &r.Bytes, &r.LocalHitBytes, &r.PeerHitBytes, &r.MissBytes, &r.DurationMS)
	})
	return r, l.end()
}

// fastCompleteBatch decodes a complete batch request (see fastPlace).
func fastCompleteBatch(b []byte) (r CompleteBatchRequest, ok bool) {
	l := lexer{b: b}
	l.object(func(k []byte) int {
		switch string(k) {
		case "job":
			r.Job = l.str()
			return 0
		case "tasks":
			r.Tasks = make([]CompleteTask, 0, len(b)/96)
			l.array(func() {
				var t CompleteTask
				l.object(func(k []byte) int {
					if string(k) == "task" {
						t.Task = l.str()
						return 0
					}
					return l.outcomeField(k, 1, &t.Bytes, &t.LocalHitBytes, &t.PeerHitBytes, &t.MissBytes, &t.DurationMS)
				})
				r.Tasks = append(r.Tasks, t)
			})
			return 1
		}
		return -1
	})
	return r, l.end()
}

// Encoders: the exact bytes of json.NewEncoder(w).Encode(v) (HTML-safe
// escaping, a final newline).

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string encoding with HTML escaping.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendField appends `,"name":` (without the comma for the first field).
func appendKey(dst []byte, first bool, name string) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// appendPlacement encodes a Placement as encoding/json does (same field
// order and omitempty rules as its struct tags).
func appendPlacement(dst []byte, p *Placement) []byte {
	dst = append(dst, '{')
	dst = appendKey(dst, true, "task")
	dst = appendString(dst, p.Task)
	for _, f := range [...]struct{ name, v string }{
		{"node", p.Node}, {"address", p.Address}, {"http_address", p.HTTPAddress},
	} {
		if f.v != "" {
			dst = appendKey(dst, false, f.name)
			dst = appendString(dst, f.v)
		}
	}
	dst = appendKey(dst, false, "rack") // no omitempty: DESIGN lists the field
	dst = appendString(dst, p.Rack)
	for _, f := range [...]struct{ name, v string }{
		{"locality", p.Locality}, {"owner", p.Owner},
	} {
		if f.v != "" {
			dst = appendKey(dst, false, f.name)
			dst = appendString(dst, f.v)
		}
	}
	if p.RingEpoch != 0 {
		dst = appendKey(dst, false, "ring_epoch")
		dst = strconv.AppendUint(dst, p.RingEpoch, 10)
	}
	dst = appendKey(dst, false, "waited_ms")
	dst = strconv.AppendInt(dst, p.WaitedMS, 10)
	if p.Error != "" {
		dst = appendKey(dst, false, "error")
		dst = appendString(dst, p.Error)
	}
	return append(dst, '}')
}

// AppendPlaceBatchResponse appends the answer to POST /v1/place/batch:
// exactly what json.NewEncoder(w).Encode(r) writes, final newline included.
func AppendPlaceBatchResponse(dst []byte, r *PlaceBatchResponse) []byte {
	dst = append(dst, `{"placements":`...)
	dst = appendList(dst, r.Placements == nil, len(r.Placements), func(dst []byte, i int) []byte {
		return appendPlacement(dst, &r.Placements[i])
	})
	return append(dst, '}', '\n')
}

// AppendCompleteResponse appends the answer to POST /v1/complete, as
// json.Encoder writes it.
func AppendCompleteResponse(dst []byte, r *CompleteResponse) []byte {
	dst = append(dst, '{')
	dst = appendKey(dst, true, "job")
	dst = appendString(dst, r.Job)
	dst = appendKey(dst, false, "task")
	dst = appendString(dst, r.Task)
	dst = appendKey(dst, false, "locality")
	dst = appendString(dst, r.Locality)
	return append(dst, '}', '\n')
}

// AppendCompleteBatchResponse appends the answer to POST
// /v1/complete/batch, as json.Encoder writes it.
func AppendCompleteBatchResponse(dst []byte, r *CompleteBatchResponse) []byte {
	dst = append(dst, `{"results":`...)
	dst = appendList(dst, r.Results == nil, len(r.Results), func(dst []byte, i int) []byte {
		x := &r.Results[i]
		dst = append(dst, '{')
		dst = appendKey(dst, true, "task")
		dst = appendString(dst, x.Task)
		if x.Locality != "" {
			dst = appendKey(dst, false, "locality")
			dst = appendString(dst, x.Locality)
		}
		if x.Error != "" {
			dst = appendKey(dst, false, "error")
			dst = appendString(dst, x.Error)
		}
		if x.Code != "" {
			dst = appendKey(dst, false, "code")
			dst = appendString(dst, x.Code)
		}
		dst = appendKey(dst, false, "status")
		dst = strconv.AppendInt(dst, int64(x.Status), 10)
		return append(dst, '}')
	})
	return append(dst, '}', '\n')
}

// AppendPlacementResponse appends the answer to POST /v1/place, as
// json.Encoder writes it.
func AppendPlacementResponse(dst []byte, p *Placement) []byte {
	return append(appendPlacement(dst, p), '\n')
}
