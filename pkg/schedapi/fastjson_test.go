package schedapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// checkFast runs a fast decoder and encoding/json on body: when the fast
// one accepts, encoding/json must accept too, with the same value.
func checkFast[T any](t *testing.T, name string, body []byte, fast func([]byte) (T, bool)) bool {
	t.Helper()
	got, ok := fast(body)
	if !ok {
		return false
	}
	var want T
	if err := DecodeJSON(bytes.NewReader(body), &want); err != nil {
		t.Fatalf("%s: fast path accepted %q, encoding/json refuses it: %v", name, body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: fast path decoded %q as %+v, encoding/json as %+v", name, body, got, want)
	}
	return true
}

// checkDecoder runs an exported request decoder (fast path, else strict)
// and DecodeJSON on body: same acceptance, same value, same error.
func checkDecoder[T any](t *testing.T, name string, body []byte, dec func([]byte) (T, error)) {
	t.Helper()
	got, err := dec(body)
	var want T
	werr := DecodeJSON(bytes.NewReader(body), &want)
	switch {
	case (err == nil) != (werr == nil):
		t.Fatalf("%s: %q: decoder says %v, DecodeJSON %v", name, body, err, werr)
	case err != nil && (err.Error() != werr.Error() || !errors.Is(err, ErrBadRequest)):
		t.Fatalf("%s: %q: decoder error %v, DecodeJSON %v (want the same, wrapping ErrBadRequest)", name, body, err, werr)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%s: %q: decoded %+v, DecodeJSON %+v", name, body, got, want)
	}
}

func fastAll(t *testing.T, body []byte) (n int) {
	checkDecoder(t, "DecodePlaceRequest", body, DecodePlaceRequest)
	checkDecoder(t, "DecodePlaceBatchRequest", body, DecodePlaceBatchRequest)
	checkDecoder(t, "DecodeCompleteRequest", body, DecodeCompleteRequest)
	checkDecoder(t, "DecodeCompleteBatchRequest", body, DecodeCompleteBatchRequest)
	for _, ok := range []bool{
		checkFast(t, "place", body, fastPlace),
		checkFast(t, "place batch", body, fastPlaceBatch),
		checkFast(t, "complete", body, fastComplete),
		checkFast(t, "complete batch", body, fastCompleteBatch),
	} {
		if ok {
			n++
		}
	}
	return n
}

var fastSeeds = append([]string{
	`{"job":"j","task":"t","split":{"uri":"s3://bkt/k","offset":0,"length":1048576},"wait_ms":-5}`,
	` { "job" : "j" , "tasks" : [ { "task" : "a" , "split" : { "uri" : "s3://bkt/u" , "offset" : 5 , "length" : 10 } } ] } `,
	`{"job":"j","task":"t","bytes":10,"local_hit_bytes":5,"peer_hit_bytes":3,"miss_bytes":2,"duration_ms":7}`,
	`{"job":"j","tasks":[{"task":"a","bytes":1},{"task":"b","miss_bytes":2,"duration_ms":3}]}`,
	`{"Job":"j"}`, `{"job":"j","job":"k"}`, `{"job":"\u00e9"}`, `{"job":"é"}`, `{"job":"\xff"}`,
	`{"job":null}`, `{"tasks":[]}`, `{"tasks":null}`, `{"wait_ms":1.0}`, `{"wait_ms":1e3}`, `{"wait_ms":01}`,
	`{"wait_ms":-0}`, `{"wait_ms":9223372036854775808}`, `{"wait_ms":-9223372036854775808}`, `{}`, `{} x`, `{`,
	`{"tasks":[{"task":"a","split":{"uri":"s3://bkt/u"},"split":{"offset":1}}]}`, `{"job":"a\u2028b"}`, "{\"job\":\"a\u2028b\"}",
	`{"job":"<&>"}`, `{"job":"x","extra":{}}`, `{"tasks":[{},{}]}`, `{"tasks":[{"task":"a"},]}`,
}, decodeSeeds...)

// TestFastDecodeSeeds: the plain forms take the fast path, the others
// fall back, and whenever the fast path accepts it agrees with
// encoding/json.
func TestFastDecodeSeeds(t *testing.T) {
	for _, s := range fastSeeds {
		fastAll(t, []byte(s))
	}
	// What clients send (json.Marshal output) takes the fast path.
	for _, v := range []any{
		PlaceRequest{Job: "j", Task: "t", Split: Split{URI: "s3://bkt/k", Offset: 3, Length: 9}, WaitMS: 100},
		PlaceBatchRequest{Job: "j", Tasks: []BatchTask{{Task: "a", Split: Split{URI: "s3://bkt/u", Length: 1}}, {Task: "b", Split: Split{URI: "s3://bkt/u", Offset: 1, Length: 1}}}},
		CompleteRequest{Job: "j", Task: "t", Bytes: 10, LocalHitBytes: 3, MissBytes: 7, DurationMS: 1},
		CompleteBatchRequest{Job: "j", Tasks: []CompleteTask{{Task: "a", Bytes: 1}}},
	} {
		raw, _ := json.Marshal(v)
		if n := fastAll(t, raw); n == 0 {
			t.Errorf("%s does not take the fast path", raw)
		}
	}
	if _, ok := fastPlace([]byte(`{"Job":"j"}`)); ok {
		t.Error("a key in another case took the fast path")
	}
}

// FuzzFastDecode checks the fast decoders, and the exported request
// decoders built on them, against encoding/json on arbitrary bodies:
//
//	go test ./pkg/schedapi -run '^$' -fuzz FuzzFastDecode -fuzztime 2m
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fastAll(t, body) })
}

// randString mixes plain text with characters every JSON encoder escapes.
func randString(r *rand.Rand) string {
	parts := []string{"a", "task-7", "s3://bkt/k", "<", ">", "&", `"`, `\`, "\n", "\t", "\b", "\f", "\x01", "\x7f", "é", "\u2028", "\u2029", "\xff", "日本", "\U0001F600", ""}
	var b strings.Builder
	for n := r.IntN(6); n > 0; n-- {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// TestFastEncode: the answer encoders write exactly what encoding/json's
// Encoder writes.
func TestFastEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	enc := func(v any) string {
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	maybe := func() string {
		if r.IntN(3) == 0 {
			return ""
		}
		return randString(r)
	}
	for i := 0; i < 2000; i++ {
		var pb PlaceBatchResponse
		if r.IntN(10) > 0 {
			pb.Placements = []Placement{}
		}
		for n := r.IntN(4); n > 0; n-- {
			pb.Placements = append(pb.Placements, Placement{
				Task: randString(r), Node: maybe(), Address: maybe(), HTTPAddress: maybe(), Rack: maybe(),
				Locality: maybe(), Owner: maybe(), RingEpoch: r.Uint64() >> r.IntN(65), WaitedMS: r.Int64N(1e6) - 10, Error: maybe(),
			})
		}
		if got, want := string(AppendPlaceBatchResponse(nil, &pb)), enc(pb); got != want {
			t.Fatalf("place batch:\n got %s\nwant %s", got, want)
		}
		if len(pb.Placements) > 0 {
			if got, want := string(AppendPlacementResponse(nil, &pb.Placements[0])), enc(pb.Placements[0]); got != want {
				t.Fatalf("placement:\n got %s\nwant %s", got, want)
			}
		}
		cr := CompleteResponse{Job: randString(r), Task: randString(r), Locality: maybe()}
		if got, want := string(AppendCompleteResponse(nil, &cr)), enc(cr); got != want {
			t.Fatalf("complete:\n got %s\nwant %s", got, want)
		}
		var cb CompleteBatchResponse
		if r.IntN(10) > 0 {
			cb.Results = []CompleteResult{}
		}
		for n := r.IntN(4); n > 0; n-- {
			cb.Results = append(cb.Results, CompleteResult{Task: randString(r), Locality: maybe(), Error: maybe(), Code: maybe(), Status: r.IntN(600) - 1})
		}
		if got, want := string(AppendCompleteBatchResponse(nil, &cb)), enc(cb); got != want {
			t.Fatalf("complete batch:\n got %s\nwant %s", got, want)
		}
	}
}

// TestPlacementRack: a placement always carries "rack" (DESIGN's POST
// /v1/place answer lists it), "" when its node has none (it was left out:
// omitempty), an unplaced batch member too, as it carries "waited_ms".
// Both encoders agree byte for byte, and the answer decoder still reads an
// answer without "rack" (an older scheduler).
func TestPlacementRack(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Placement
		want string
	}{
		{"placed, rack", Placement{Task: "t", Node: "n1", Rack: "r1", Locality: "DATA_LOCAL", WaitedMS: 1},
			`{"task":"t","node":"n1","rack":"r1","locality":"DATA_LOCAL","waited_ms":1}`},
		{"placed, no rack", Placement{Task: "t", Node: "n1", Address: "127.0.0.1:7070", Locality: "OTHER_LOCAL", Owner: "n2", RingEpoch: 9},
			`{"task":"t","node":"n1","address":"127.0.0.1:7070","rack":"","locality":"OTHER_LOCAL","owner":"n2","ring_epoch":9,"waited_ms":0}`},
		{"unplaced", Placement{Task: "t", WaitedMS: 3, Error: "deferred: no slot"},
			`{"task":"t","rack":"","waited_ms":3,"error":"deferred: no slot"}`},
	} {
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(tc.p); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); got != tc.want+"\n" {
			t.Errorf("%s: encoding/json wrote %s, want %s", tc.name, got, tc.want)
		}
		if got := string(AppendPlacementResponse(nil, &tc.p)); got != tc.want+"\n" {
			t.Errorf("%s: AppendPlacementResponse wrote %s, want %s", tc.name, got, tc.want)
		}
		batch := PlaceBatchResponse{Placements: []Placement{tc.p}}
		b.Reset()
		if err := json.NewEncoder(&b).Encode(batch); err != nil {
			t.Fatal(err)
		}
		if got, want := string(AppendPlaceBatchResponse(nil, &batch)), b.String(); got != want {
			t.Errorf("%s: batch:\n got %s\nwant %s", tc.name, got, want)
		}
		if got, want := string(AppendPlaceBatchResponse(nil, &batch)), `{"placements":[`+tc.want+"]}\n"; got != want {
			t.Errorf("%s: batch:\n got %s\nwant %s", tc.name, got, want)
		}
	}
	old := []byte(`{"placements":[{"task":"a","node":"n1","locality":"DATA_LOCAL","waited_ms":0},{"task":"b","waited_ms":0,"error":"deferred: x"}]}`)
	got, err := DecodePlaceBatchResponse(old)
	if err != nil || len(got.Placements) != 2 || got.Placements[0].Rack != "" || !got.Placements[0].Placed() || got.Placements[1].Placed() {
		t.Errorf("answer without rack: got %+v, %v", got, err)
	}
	var one Placement
	if err := json.Unmarshal([]byte(`{"task":"a","node":"n1","waited_ms":0}`), &one); err != nil || one.Node != "n1" || one.Rack != "" {
		t.Errorf("placement without rack: got %+v, %v", one, err)
	}
}

// TestAppendPlacementAllocs: the fast encoder appends into the caller's
// buffer without allocating, rack or not.
func TestAppendPlacementAllocs(t *testing.T) {
	_, resp := benchBatch(8)
	resp.Placements[1].Rack = ""
	resp.Placements[2] = Placement{Task: "t", Error: "deferred: no slot"}
	buf := make([]byte, 0, 64<<10)
	if n := testing.AllocsPerRun(100, func() { buf = AppendPlaceBatchResponse(buf[:0], &resp) }); n != 0 {
		t.Errorf("AppendPlaceBatchResponse: %v allocations per run, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf = AppendPlacementResponse(buf[:0], &resp.Placements[1]) }); n != 0 {
		t.Errorf("AppendPlacementResponse: %v allocations per run, want 0", n)
	}
}

// TestClientCodec: the client-side request encoders write what
// json.Marshal writes, and the answer decoders read what the scheduler
// writes (and anything else as json.Unmarshal does).
func TestClientCodec(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 1000; i++ {
		var pb PlaceBatchRequest
		pb.Job, pb.WaitMS = randString(r), r.Int64N(1e6)-5
		if r.IntN(8) > 0 {
			pb.Tasks = []BatchTask{}
		}
		for n := r.IntN(4); n > 0; n-- {
			pb.Tasks = append(pb.Tasks, BatchTask{Task: randString(r), Split: Split{URI: randString(r), Offset: r.Int64() - r.Int64(), Length: r.Int64N(1 << 40)}})
		}
		want, _ := json.Marshal(pb)
		if got := AppendPlaceBatchRequest(nil, &pb); string(got) != string(want) {
			t.Fatalf("place batch request:\n got %s\nwant %s", got, want)
		}
		var cb CompleteBatchRequest
		cb.Job = randString(r)
		if r.IntN(8) > 0 {
			cb.Tasks = []CompleteTask{}
		}
		for n := r.IntN(4); n > 0; n-- {
			cb.Tasks = append(cb.Tasks, CompleteTask{Task: randString(r), Bytes: r.Int64(), LocalHitBytes: -r.Int64N(5), PeerHitBytes: 1, MissBytes: r.Int64N(9), DurationMS: r.Int64()})
		}
		want, _ = json.Marshal(cb)
		if got := AppendCompleteBatchRequest(nil, &cb); string(got) != string(want) {
			t.Fatalf("complete batch request:\n got %s\nwant %s", got, want)
		}

		valid := func() string { return strings.ToValidUTF8(randString(r), "\uFFFD") } // what survives a JSON round trip
		var resp PlaceBatchResponse
		resp.Placements = []Placement{}
		for n := r.IntN(5); n > 0; n-- {
			resp.Placements = append(resp.Placements, Placement{Task: "t" + valid(), Node: "n1", Address: "127.0.0.1:7070", Locality: "DATA_LOCAL", RingEpoch: r.Uint64(), WaitedMS: r.Int64N(100), Error: valid()})
		}
		raw := AppendPlaceBatchResponse(nil, &resp)
		checkResponse(t, raw, DecodePlaceBatchResponse)
		got, err := DecodePlaceBatchResponse(raw)
		if err != nil || !reflect.DeepEqual(got, resp) {
			t.Fatalf("decoded %+v (%v), want %+v", got, err, resp)
		}
		cr := CompleteBatchResponse{Results: []CompleteResult{{Task: valid(), Locality: "RACK_LOCAL", Status: 200}, {Task: "x", Error: valid(), Code: CodeNotFound, Status: 400}, {Task: "y", Error: valid(), Status: 404}}}
		raw = AppendCompleteBatchResponse(nil, &cr)
		checkResponse(t, raw, DecodeCompleteBatchResponse)
		gotc, err := DecodeCompleteBatchResponse(raw)
		if err != nil || !reflect.DeepEqual(gotc, cr) {
			t.Fatalf("decoded %+v (%v), want %+v", gotc, err, cr)
		}
	}
	// Unknown fields in answers are ignored (a later scheduler may add some).
	got, err := DecodePlaceBatchResponse([]byte(`{"placements":[{"task":"a","node":"n1","new_field":[1,2]}],"also":"new"}`))
	if err != nil || len(got.Placements) != 1 || got.Placements[0].Node != "n1" {
		t.Errorf("with unknown fields: %+v %v", got, err)
	}
}

// checkResponse compares an answer decoder with json.Unmarshal.
func checkResponse[T any](t *testing.T, raw []byte, dec func([]byte) (T, error)) {
	t.Helper()
	got, err := dec(raw)
	var want T
	werr := json.Unmarshal(raw, &want)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q: decoder says %v, json.Unmarshal %v", raw, err, werr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, json.Unmarshal %+v", raw, got, want)
	}
}

// FuzzResponseDecode checks the answer decoders against json.Unmarshal.
func FuzzResponseDecode(f *testing.F) {
	f.Add([]byte(`{"placements":[{"task":"a","node":"n1","address":"x:1","locality":"DATA_LOCAL","owner":"n1","ring_epoch":18446744073709551615,"waited_ms":0}]}`))
	f.Add([]byte(`{"results":[{"task":"a","locality":"DATA_LOCAL","status":200},{"task":"b","error":"x","status":404},{"task":"c","error":"x","code":"not_found","status":400}]}`))
	f.Add([]byte(`{"placements":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkResponse(t, raw, DecodePlaceBatchResponse)
		checkResponse(t, raw, DecodeCompleteBatchResponse)
	})
}
