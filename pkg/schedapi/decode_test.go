package schedapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// decodeAll runs each request decoder and validator on body, as the
// handlers do, and checks the invariants every accepted request must hold
// and every refused one must respect (a 400 or 413, never a panic or 500).
func decodeAll(t *testing.T, body []byte) {
	const maxWait, maxTasks = time.Minute, 64
	refused := func(what string, err error) {
		if !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s: error %v wraps neither ErrBadRequest nor ErrTooLarge (a 400 or 413)", what, err)
		}
		if err.Error() == "" {
			t.Fatalf("%s: empty error message", what)
		}
	}
	checkSplit := func(s Split) {
		if s.URI == "" || s.Offset < 0 || s.Length <= 0 || s.Offset+s.Length < 0 {
			t.Fatalf("accepted bad split %+v", s)
		}
	}
	// roundTrip: an accepted request re-encodes to JSON that decodes to
	// the same value.
	roundTrip := func(v any, fresh any) {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := DecodeJSON(bytes.NewReader(raw), fresh); err != nil {
			t.Fatalf("re-decoding %s: %v", raw, err)
		}
		if !reflect.DeepEqual(reflect.ValueOf(v).Elem().Interface(), reflect.ValueOf(fresh).Elem().Interface()) {
			t.Fatalf("round trip changed %+v into %+v", v, fresh)
		}
	}

	var p PlaceRequest
	if err := DecodeJSON(bytes.NewReader(body), &p); err != nil {
		refused("place decode", err)
	} else if err := p.Validate(maxWait); err != nil {
		refused("place validate", err)
	} else {
		checkSplit(p.Split)
		if p.Job == "" || p.Task == "" || p.WaitMS > maxWait.Milliseconds() {
			t.Fatalf("accepted %+v", p)
		}
		roundTrip(&p, &PlaceRequest{})
	}

	var b PlaceBatchRequest
	if err := DecodeJSON(bytes.NewReader(body), &b); err != nil {
		refused("batch decode", err)
	} else if err := b.Validate(maxWait, maxTasks); err != nil {
		refused("batch validate", err)
	} else {
		if b.Job == "" || len(b.Tasks) == 0 || len(b.Tasks) > maxTasks {
			t.Fatalf("accepted batch %+v", b)
		}
		seen := map[string]bool{}
		for _, tk := range b.Tasks {
			checkSplit(tk.Split)
			if tk.Task == "" || seen[tk.Task] {
				t.Fatalf("accepted task %+v", tk)
			}
			seen[tk.Task] = true
		}
		roundTrip(&b, &PlaceBatchRequest{})
	}

	var c CompleteRequest
	if err := DecodeJSON(bytes.NewReader(body), &c); err != nil {
		refused("complete decode", err)
	} else if err := c.Validate(); err != nil {
		refused("complete validate", err)
	} else {
		if c.Job == "" || c.Task == "" || c.Bytes < 0 || c.LocalHitBytes < 0 || c.PeerHitBytes < 0 || c.MissBytes < 0 || c.DurationMS < 0 {
			t.Fatalf("accepted %+v", c)
		}
		if c.Bytes != 0 && c.Bytes < c.LocalHitBytes+c.PeerHitBytes+c.MissBytes {
			t.Fatalf("accepted inconsistent outcome %+v", c)
		}
		roundTrip(&c, &CompleteRequest{})
	}

	var cb CompleteBatchRequest
	if err := DecodeJSON(bytes.NewReader(body), &cb); err != nil {
		refused("complete batch decode", err)
	} else if err := cb.Validate(maxTasks); err != nil {
		refused("complete batch validate", err)
	} else if len(cb.Tasks) == 0 || len(cb.Tasks) > maxTasks {
		t.Fatalf("accepted complete batch of %d", len(cb.Tasks))
	}

	// Through a size limit, as the handlers read bodies.
	limited := http.MaxBytesReader(httptest.NewRecorder(), bodyOf(body), 256)
	var lp PlaceRequest
	if err := DecodeJSON(limited, &lp); err != nil {
		refused("limited decode", err)
		if len(body) <= 256 && errors.Is(err, ErrTooLarge) {
			t.Fatalf("a %d-byte body refused as too large", len(body))
		}
	} else if len(body) > 256 && strings.TrimSpace(string(body[256:])) != "" {
		t.Fatalf("a %d-byte body decoded through a 256-byte limit", len(body))
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func bodyOf(b []byte) nopCloser { return nopCloser{bytes.NewReader(b)} }

var decodeSeeds = []string{
	`{"job":"j","task":"t","split":{"uri":"s3://bkt/k","offset":0,"length":1048576},"wait_ms":0}`,
	`{"job":"j","tasks":[{"task":"a","split":{"uri":"s3://bkt/u","offset":5,"length":10}},{"task":"b","split":{"uri":"s3://bkt/u","offset":0,"length":1}}],"wait_ms":-1}`,
	`{"job":"j","task":"t","bytes":10,"local_hit_bytes":5,"peer_hit_bytes":3,"miss_bytes":2,"duration_ms":7}`,
	`{"job":"j","tasks":[{"task":"a","bytes":1}]}`,
	`{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":-1,"length":1}}`,
	`{"job":"j","task":"t","split":{"uri":"","offset":0,"length":1}}`,
	`{"job":"j","task":"t","split":{"uri":"s3://bkt/u","offset":9223372036854775807,"length":9223372036854775807}}`,
	`{"job":"j","task":"t","unknown":1}`,
	`{"job":"j","tasks":[{"task":"a","split":{"uri":"s3://bkt/u","offset":0,"length":1}},{"task":"a","split":{"uri":"s3://bkt/u","offset":0,"length":1}}]}`,
	`{"job":"\u0000","task":"\ud800","split":{"uri":"s3://bkt/u","offset":1e3,"length":1.5}}`,
	`{"job":"j","task":"t","bytes":1,"local_hit_bytes":9223372036854775807,"peer_hit_bytes":9223372036854775807}`,
	`[]`, `null`, `"x"`, `{}`, `{"job":"j"} {"job":"k"}`, `{"job":`, ``, `   `,
}

func TestDecodeSeeds(t *testing.T) {
	for _, s := range decodeSeeds {
		decodeAll(t, []byte(s))
	}
}

// FuzzDecode feeds arbitrary bodies to the request decoders and
// validators. Run it for a while with
//
//	go test ./pkg/schedapi -run '^$' -fuzz FuzzDecode -fuzztime 2m
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeAll(t, body)
	})
}

// TestValidateTable checks the validators on their own.
func TestValidateTable(t *testing.T) {
	long := strings.Repeat("x", MaxNameLen+1)
	cases := []struct {
		name string
		req  PlaceRequest
		ok   bool
	}{
		{"ok", PlaceRequest{Job: "j", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}}, true},
		{"long job", PlaceRequest{Job: long, Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}}, false},
		{"long task", PlaceRequest{Job: "j", Task: long, Split: Split{URI: "s3://bkt/u", Length: 1}}, false},
		{"long uri", PlaceRequest{Job: "j", Task: "t", Split: Split{URI: strings.Repeat("u", MaxURILen+1), Length: 1}}, false},
		{"bad utf8", PlaceRequest{Job: "j\xff", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}}, false},
		{"negative length", PlaceRequest{Job: "j", Task: "t", Split: Split{URI: "s3://bkt/u", Length: -1}}, false},
		{"wait at limit", PlaceRequest{Job: "j", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}, WaitMS: 60000}, true},
		{"wait over limit", PlaceRequest{Job: "j", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}, WaitMS: 60001}, false},
		{"negative wait", PlaceRequest{Job: "j", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}, WaitMS: -5}, true},
		// GET /v1/jobs/.. is cleaned to /v1 before routing: such a job
		// could be placed but never read back.
		{"job ..", PlaceRequest{Job: "..", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}}, false},
		{"job .", PlaceRequest{Job: ".", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}}, false},
		{"job ...", PlaceRequest{Job: "...", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}}, true},
		{"job a/..", PlaceRequest{Job: "a/..", Task: "t", Split: Split{URI: "s3://bkt/u", Length: 1}}, true},
		{"task ..", PlaceRequest{Job: "j", Task: "..", Split: Split{URI: "s3://bkt/u", Length: 1}}, true},
	}
	for _, tc := range cases {
		err := tc.req.Validate(time.Minute)
		if (err == nil) != tc.ok {
			t.Errorf("%s: got %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: %v does not wrap ErrBadRequest", tc.name, err)
		}
	}
}

// Field names are matched exactly: encoding/json alone would take "JOB"
// for "job"; the API refuses it as an unknown field, on the fast path and
// the fallback alike (the fallback runs for any body the fast path does not
// take, e.g. one with white space inside strings' escapes or odd layout).
func TestFieldNameCase(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"exact", `{"job":"j","task":"t","split":{"uri":"s3://bkt/k","offset":0,"length":1}}`, true},
		{"exact, escaped value", `{"job":"j\u0031","task":"t","split":{"uri":"s3://bkt/k","offset":0,"length":1}}`, true},
		{"top-level key upper", `{"JOB":"j","task":"t","split":{"uri":"s3://bkt/k","offset":0,"length":1}}`, false},
		{"nested key mixed", `{"job":"j","task":"t","split":{"Uri":"s3://bkt/k","offset":0,"length":1}}`, false},
		{"value equal to a key name", `{"job":"Split","task":"URI","split":{"uri":"JOB","offset":0,"length":1}}`, true},
		{"escaped key", `{"j\u006fb":"j","task":"t","split":{"uri":"s3://bkt/k","offset":0,"length":1}}`, true},
		{"escaped key upper", `{"\u004aOB":"j","task":"t","split":{"uri":"s3://bkt/k","offset":0,"length":1}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePlaceRequest([]byte(tc.body))
			var p PlaceRequest
			err2 := DecodeJSON(strings.NewReader(tc.body), &p)
			for _, e := range []error{err, err2} {
				if tc.ok && e != nil {
					t.Fatalf("got %v, want it accepted", e)
				}
				if !tc.ok && !errors.Is(e, ErrBadRequest) {
					t.Fatalf("got %v, want ErrBadRequest", e)
				}
			}
		})
	}
	// Batch bodies: keys inside the tasks array.
	body := `{"job":"j","tasks":[{"task":"a","split":{"uri":"s3://bkt/k","offset":0,"length":1}},{"Task":"b","split":{"uri":"s3://bkt/k","offset":0,"length":1}}]}`
	if _, err := DecodePlaceBatchRequest([]byte(body)); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("batch with \"Task\": got %v, want ErrBadRequest", err)
	}
}
