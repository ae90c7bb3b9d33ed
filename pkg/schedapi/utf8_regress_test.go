package schedapi

import (
	"errors"
	"testing"
	"time"
)

// TestDecodeRejectsInvalidUTF8: a request body whose job, task or split
// URI holds bytes that are not UTF-8 is bad input (CheckName says names
// are "non-empty valid UTF-8"; the gRPC service refuses the same request).
// Was: the fast path gave up on such a string and encoding/json silently
// replaced each bad byte with U+FFFD, so the scheduler accepted the
// request under another name ("j\xff" became "j\uFFFD", and "j\xfe" the
// same job), which GET /v1/jobs/j%FF then refused as not UTF-8.
func TestDecodeRejectsInvalidUTF8(t *testing.T) {
	const maxWait = time.Hour
	tests := []struct {
		name  string
		check func() error
	}{
		{"place job", func() error {
			r, err := DecodePlaceRequest([]byte("{\"job\":\"j\xff\",\"task\":\"t\",\"split\":{\"uri\":\"s3://bkt/k\",\"length\":1}}"))
			if err == nil {
				err = r.Validate(maxWait)
			}
			return err
		}},
		{"place task", func() error {
			r, err := DecodePlaceRequest([]byte("{\"job\":\"j\",\"task\":\"t\xfe\",\"split\":{\"uri\":\"s3://bkt/k\",\"length\":1}}"))
			if err == nil {
				err = r.Validate(maxWait)
			}
			return err
		}},
		{"place split uri", func() error {
			r, err := DecodePlaceRequest([]byte("{\"job\":\"j\",\"task\":\"t\",\"split\":{\"uri\":\"s3://bkt/k\xff\",\"length\":1}}"))
			if err == nil {
				err = r.Validate(maxWait)
			}
			return err
		}},
		{"batch task", func() error {
			r, err := DecodePlaceBatchRequest([]byte("{\"job\":\"j\",\"tasks\":[{\"task\":\"t\xff\",\"split\":{\"uri\":\"s3://bkt/k\",\"length\":1}}]}"))
			if err == nil {
				err = r.Validate(maxWait, 10)
			}
			return err
		}},
		{"complete job", func() error {
			r, err := DecodeCompleteRequest([]byte("{\"job\":\"j\xff\",\"task\":\"t\"}"))
			if err == nil {
				err = r.Validate()
			}
			return err
		}},
		{"complete batch task", func() error {
			r, err := DecodeCompleteBatchRequest([]byte("{\"job\":\"j\",\"tasks\":[{\"task\":\"t\xff\"}]}"))
			if err == nil {
				err = r.Validate(10)
			}
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(); !errors.Is(err, ErrBadRequest) {
				t.Errorf("decode+validate = %v, want an error wrapping ErrBadRequest (the body is not UTF-8)", err)
			}
		})
	}
}

// TestDecodeRejectsLoneSurrogates: a \u escape of a lone UTF-16 surrogate
// (a high one not followed by a low one, or a low one alone) names no
// character, so a job, task or split URI holding one is bad input. Was:
// encoding/json replaced it with U+FFFD, so "t\ud800" and "t\udfff" were
// accepted as the task "t\uFFFD" (one task: the second was a 409, a
// complete of either completed the other) and a URI became another
// object's name, as invalid UTF-8 bytes did before
// TestDecodeRejectsInvalidUTF8. A surrogate pair and an escaped backslash
// before "ud800" stay valid.
func TestDecodeRejectsLoneSurrogates(t *testing.T) {
	const maxWait = time.Hour
	place := func(job, task, uri string) func() (any, error) {
		return func() (any, error) {
			r, err := DecodePlaceRequest([]byte(`{"job":"` + job + `","task":"` + task + `","split":{"uri":"` + uri + `","length":1}}`))
			if err == nil {
				err = r.Validate(maxWait)
			}
			return r, err
		}
	}
	tests := []struct {
		name  string
		check func() (any, error)
		want  any // the decoded request when it is valid; nil: refused
	}{
		{"place job high", place(`j\ud800`, "t", "s3://bkt/k"), nil},
		{"place job low", place(`j\udfff`, "t", "s3://bkt/k"), nil},
		{"place task high at end", place("j", `t\uD800`, "s3://bkt/k"), nil},
		{"place task two highs", place("j", `\ud800\ud800`, "s3://bkt/k"), nil},
		{"place task high then other escape", place("j", `\ud800\n`, "s3://bkt/k"), nil},
		{"place split uri", place("j", "t", `s3://bkt/k\ud83d`), nil},
		{"batch task", func() (any, error) {
			r, err := DecodePlaceBatchRequest([]byte(`{"job":"j","tasks":[{"task":"t\udc00","split":{"uri":"s3://bkt/k","length":1}}]}`))
			if err == nil {
				err = r.Validate(maxWait, 10)
			}
			return r, err
		}, nil},
		{"complete job", func() (any, error) {
			r, err := DecodeCompleteRequest([]byte(`{"job":"j\ud800","task":"t"}`))
			if err == nil {
				err = r.Validate()
			}
			return r, err
		}, nil},
		{"complete batch task", func() (any, error) {
			r, err := DecodeCompleteBatchRequest([]byte(`{"job":"j","tasks":[{"task":"t\udbff"}]}`))
			if err == nil {
				err = r.Validate(10)
			}
			return r, err
		}, nil},
		{"surrogate pair", place("j", `t\ud83d\ude00`, "s3://bkt/k"),
			PlaceRequest{Job: "j", Task: "t\U0001F600", Split: Split{URI: "s3://bkt/k", Length: 1}}},
		{"escaped backslash", place("j", `t\\ud800`, "s3://bkt/k"),
			PlaceRequest{Job: "j", Task: `t\ud800`, Split: Split{URI: "s3://bkt/k", Length: 1}}},
		{"U+FFFD itself", place("j", `t\ufffd`, "s3://bkt/k"),
			PlaceRequest{Job: "j", Task: "t\uFFFD", Split: Split{URI: "s3://bkt/k", Length: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.check()
			switch {
			case tc.want == nil && !errors.Is(err, ErrBadRequest):
				t.Errorf("decode+validate = %+v, %v; want an error wrapping ErrBadRequest (a lone surrogate is no character)", got, err)
			case tc.want != nil && err != nil:
				t.Errorf("decode+validate: %v; want %+v", err, tc.want)
			case tc.want != nil && got != tc.want:
				t.Errorf("decoded %+v, want %+v", got, tc.want)
			}
		})
	}
}
