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
