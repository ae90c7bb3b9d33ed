package readpath

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	cachev1 "github.com/locuscache/locus/proto/cache/v1"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		r    Request
		ok   bool
	}{
		{"ok", Request{URI: "s3://b/k", Offset: 0, Length: 1}, true},
		{"ok big", Request{URI: "s3://b/k", Offset: 1 << 40, Length: 1 << 40}, true},
		{"empty uri", Request{Offset: 0, Length: 1}, false},
		{"negative offset", Request{URI: "s3://b/k", Offset: -1, Length: 1}, false},
		{"zero length", Request{URI: "s3://b/k", Length: 0}, false},
		{"negative length", Request{URI: "s3://b/k", Length: -5}, false},
		{"overflow", Request{URI: "s3://b/k", Offset: math.MaxInt64 - 1, Length: 2}, false},
		{"max", Request{URI: "s3://b/k", Offset: math.MaxInt64 - 2, Length: 2}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Validate()
			if tc.ok && err != nil {
				t.Fatalf("Validate = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("Validate = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestNames(t *testing.T) {
	want := []string{"cold", "capacity", "invalidated", "owner_unavailable", "corrupt"}
	for i, w := range want {
		if got := MissCause(i).String(); got != w {
			t.Errorf("MissCause(%d) = %q, want %q", i, got, w)
		}
	}
	if got := MissCause(9).String(); got != "MissCause(9)" {
		t.Errorf("unknown cause = %q", got)
	}
	for i, w := range []string{"local", "peer", "origin"} {
		if got := Source(i).String(); got != w {
			t.Errorf("Source(%d) = %q, want %q", i, got, w)
		}
	}
}

func TestCauseProtoMapping(t *testing.T) {
	want := map[MissCause]cachev1.MissCause{
		Cold:             cachev1.MissCause_MISS_CAUSE_COLD,
		Capacity:         cachev1.MissCause_MISS_CAUSE_CAPACITY,
		Invalidated:      cachev1.MissCause_MISS_CAUSE_INVALIDATED,
		OwnerUnavailable: cachev1.MissCause_MISS_CAUSE_OWNER_UNAVAILABLE,
		Corrupt:          cachev1.MissCause_MISS_CAUSE_CORRUPT,
	}
	for c, p := range want {
		if got := CauseToProto(c); got != p {
			t.Errorf("CauseToProto(%v) = %v, want %v", c, got, p)
		}
		back, ok := CauseFromProto(p)
		if !ok || back != c {
			t.Errorf("CauseFromProto(%v) = %v,%v", p, back, ok)
		}
	}
	if _, ok := CauseFromProto(cachev1.MissCause_MISS_CAUSE_UNSPECIFIED); ok {
		t.Error("unspecified cause mapped")
	}
	if got := CauseToProto(-1); got != cachev1.MissCause_MISS_CAUSE_UNSPECIFIED {
		t.Errorf("CauseToProto(-1) = %v", got)
	}
}

func randomSummary(r *rand.Rand) Summary {
	var s Summary
	for i := range s.Misses {
		if r.IntN(2) == 0 {
			s.Misses[i] = MissCount{Pages: r.Int64N(10) + 1, Bytes: r.Int64N(1 << 30)}
			s.OriginBytes += s.Misses[i].Bytes
		}
	}
	s.LocalHitBytes = r.Int64N(1 << 30)
	s.PeerHitBytes = r.Int64N(1 << 30)
	s.Bytes = s.LocalHitBytes + s.PeerHitBytes + s.OriginBytes
	s.Version = `"etag"`
	s.ObjectSize = r.Int64N(1 << 40)
	s.NodeID = "n1"
	return s
}

func TestProtoRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		s := randomSummary(r)
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
		got := FromProto(s.ToProto())
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip: got %+v, want %+v", got, s)
		}
	}
	if got := FromProto(nil); !reflect.DeepEqual(got, Summary{}) {
		t.Fatalf("FromProto(nil) = %+v", got)
	}
}

func TestFromProtoUnknownCause(t *testing.T) {
	m := &cachev1.ReadSummary{
		Bytes: 30, OriginBytes: 30,
		Misses: []*cachev1.MissCount{
			{Cause: cachev1.MissCause_MISS_CAUSE_UNSPECIFIED, Pages: 1, Bytes: 10},
			{Cause: cachev1.MissCause(77), Pages: 1, Bytes: 10},
			{Cause: cachev1.MissCause_MISS_CAUSE_COLD, Pages: 1, Bytes: 10},
		},
	}
	s := FromProto(m)
	if s.Misses[Cold] != (MissCount{Pages: 3, Bytes: 30}) {
		t.Fatalf("cold = %+v", s.Misses[Cold])
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestAddAndCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var total Summary
	var want Summary
	for range 50 {
		s := randomSummary(r)
		total.Add(s)
		want.Bytes += s.Bytes
		want.LocalHitBytes += s.LocalHitBytes
		want.PeerHitBytes += s.PeerHitBytes
		want.OriginBytes += s.OriginBytes
		for i := range s.Misses {
			want.Misses[i].Pages += s.Misses[i].Pages
			want.Misses[i].Bytes += s.Misses[i].Bytes
		}
	}
	if !reflect.DeepEqual(total, want) {
		t.Fatalf("Add: %+v != %+v", total, want)
	}
	if err := total.Check(); err != nil {
		t.Fatal(err)
	}
	if total.MissPages() == 0 || total.SourceBytes(Origin) != total.OriginBytes ||
		total.SourceBytes(Local) != total.LocalHitBytes || total.SourceBytes(Peer) != total.PeerHitBytes {
		t.Fatal("accessors disagree")
	}
	bad := total
	bad.Bytes++
	if bad.Check() == nil {
		t.Fatal("Check accepted bytes mismatch")
	}
	bad = total
	bad.Misses[Cold].Bytes++
	if bad.Check() == nil {
		t.Fatal("Check accepted miss mismatch")
	}
}
