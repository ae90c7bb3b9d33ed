package schedapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// DecodeJSON reads exactly one JSON value from r into v, strictly, as the
// scheduler reads request bodies: an unknown field, a wrong type,
// malformed JSON, an empty body or data after the value are ErrBadRequest
// (naming the field or offset); a body over an http.MaxBytesReader limit
// is ErrTooLarge.
func DecodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
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
	return nil
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
	err := DecodeJSON(bytes.NewReader(b), &v)
	return v, err
}
