package schedapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// DecodeJSON reads exactly one JSON value from r into v, strictly, as the
// scheduler reads request bodies: an unknown field, a field name in
// another case than the API's ("JOB" for "job": encoding/json alone would
// accept it), a wrong type, malformed JSON, an empty body or data after
// the value are ErrBadRequest (naming the field or offset); a body over an
// http.MaxBytesReader limit is ErrTooLarge.
func DecodeJSON(r io.Reader, v any) error {
	var buf bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(r, &buf))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	// Exactly one value: anything but white space after it is an error.
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return decodeError(err)
		}
		return badRequest("unexpected data after the JSON object")
	}
	if i := loneSurrogate(buf.Bytes()); i >= 0 {
		// encoding/json decodes it as U+FFFD: "t\ud800" and "t\udfff"
		// would be one task, and a split's URI another object's name.
		return badRequest("the \\u escape at byte %d is a lone UTF-16 surrogate (%s), which names no character: send a character above U+FFFF as a surrogate pair or as UTF-8", i, buf.Bytes()[i:i+6])
	}
	return checkKeyCase(buf.Bytes(), reflect.TypeOf(v))
}

// loneSurrogate returns the offset of the first \u escape in body that
// is a lone UTF-16 surrogate (a high one not followed by the \u escape of
// a low one, or a low one not after a high one), or -1. body is valid
// JSON, so every backslash starts an escape inside a string.
func loneSurrogate(body []byte) int {
	// escaped returns the code unit of the \uXXXX escape at i, or -1.
	escaped := func(i int) rune {
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return -1
		}
		var r rune
		for _, c := range body[i+2 : i+6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return -1
			}
		}
		return r
	}
	for i := 0; i < len(body); {
		j := bytes.IndexByte(body[i:], '\\')
		if j < 0 {
			return -1
		}
		i += j
		switch r := escaped(i); {
		case r < 0: // \" \\ \/ \b \f \n \r \t
			i += 2
		case r >= 0xD800 && r <= 0xDBFF:
			if lo := escaped(i + 6); lo < 0xDC00 || lo > 0xDFFF {
				return i
			}
			i += 12
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		default:
			i += 6
		}
	}
	return -1
}

// checkKeyCase rejects an object key of body that is not exactly one of
// the JSON field names of t. DisallowUnknownFields has already refused
// keys that match no field in any case, so a key left that is not an
// exact name is a case variant of one.
func checkKeyCase(body []byte, t reflect.Type) error {
	names := fieldNames(t)
	dec := json.NewDecoder(bytes.NewReader(body))
	// One frame per open container; in an object, key says whether a
	// key comes next (else its value).
	type frame struct{ object, key bool }
	var stack []frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].key = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return decodeError(err)
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if n := len(stack); n > 0 && stack[n-1].object {
					stack[n-1].key = false
				}
				stack = append(stack, frame{object: d == '{', key: d == '{'})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].key {
			k, _ := tok.(string)
			if _, ok := names[k]; !ok {
				return badRequest("json: unknown field %q (field names are lower case, as in %q)", k, strings.ToLower(k))
			}
			stack[n-1].key = false
			continue
		}
		valueDone()
	}
}

var fieldNamesCache sync.Map // reflect.Type -> map[string]struct{}

// fieldNames returns the JSON names of the struct fields reachable from t
// (through pointers, slices, arrays, maps and nested structs).
func fieldNames(t reflect.Type) map[string]struct{} {
	if m, ok := fieldNamesCache.Load(t); ok {
		return m.(map[string]struct{})
	}
	m := make(map[string]struct{})
	seen := make(map[reflect.Type]bool)
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			m[name] = struct{}{}
			walk(f.Type)
		}
	}
	walk(t)
	fieldNamesCache.Store(t, m)
	return m
}

func decodeError(err error) error {
	var tooLarge *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return fmt.Errorf("%w: the limit is %d bytes", ErrTooLarge, tooLarge.Limit)
	case errors.Is(err, io.EOF):
		return badRequest("empty body: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("truncated JSON")
	case errors.As(err, &syntax):
		return badRequest("malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(top level)"
		}
		return badRequest("field %s: want %v, got JSON %s", field, typ.Type, typ.Value)
	}
	// Unknown fields ("json: unknown field \"x\"") and the rest.
	return badRequest("%v", err)
}

// The request decoders, for the scheduler's handlers: the fast path of
// fastjson.go for the plain form every encoder writes, else DecodeJSON's
// strict decoding with its errors. Either way the result is what
// DecodeJSON gives (FuzzFastDecode checks it).

// DecodePlaceRequest decodes the body of POST /v1/place.
func DecodePlaceRequest(b []byte) (PlaceRequest, error) { return decodeRequest(b, fastPlace) }

// DecodePlaceBatchRequest decodes the body of POST /v1/place/batch.
func DecodePlaceBatchRequest(b []byte) (PlaceBatchRequest, error) {
	return decodeRequest(b, fastPlaceBatch)
}

// DecodeCompleteRequest decodes the body of POST /v1/complete.
func DecodeCompleteRequest(b []byte) (CompleteRequest, error) {
	return decodeRequest(b, fastComplete)
}

// DecodeCompleteBatchRequest decodes the body of POST /v1/complete/batch.
func DecodeCompleteBatchRequest(b []byte) (CompleteBatchRequest, error) {
	return decodeRequest(b, fastCompleteBatch)
}

func decodeRequest[T any](b []byte, fast func([]byte) (T, bool)) (T, error) {
	if v, ok := fast(b); ok {
		return v, nil
	}
	var v T
	if !utf8.Valid(b) {
		// encoding/json would replace each bad byte with U+FFFD: "j\xff"
		// and "j\xfe" would become one job, and a split's URI another
		// object's name.
		return v, badRequest("request body is not valid UTF-8")
	}
	err := DecodeJSON(bytes.NewReader(b), &v)
	return v, err
}
