package membership

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func fullMeta() NodeMeta {
	return NodeMeta{
		ID:              "cache-0.locus",
		Rack:            "rack-a",
		GRPCAddr:        "10.0.0.1:7070",
		HTTPAddr:        "10.0.0.1:7080",
		Slots:           16,
		CapacityBytes:   512 << 30,
		State:           StateDraining,
		BlockSize:       128 << 20,
		Replication:     2,
		PageSize:        1 << 20,
		ProtocolVersion: ProtocolVersion,
		Role:            RoleCache,
	}
}

// maxMeta has every field at its longest.
func maxMeta() NodeMeta {
	addr := strings.Repeat("h", MaxAddrLen-6) + ":65535"
	return NodeMeta{
		ID:              strings.Repeat("i", MaxIDLen),
		Rack:            strings.Repeat("r", MaxRackLen),
		GRPCAddr:        addr,
		HTTPAddr:        addr,
		Slots:           MaxSlots,
		CapacityBytes:   1<<63 - 1,
		State:           StateDraining,
		BlockSize:       1 << 62,
		Replication:     MaxReplication,
		PageSize:        1 << 62,
		ProtocolVersion: 1<<32 - 1,
		Role:            RoleCache,
		Boot:            1<<64 - 1,
	}
}

func TestMetaValidate(t *testing.T) {
	ok := []struct {
		name string
		edit func(*NodeMeta)
	}{
		{"full", func(*NodeMeta) {}},
		{"zero state and role", func(m *NodeMeta) { m.State, m.Role = "", "" }},
		{"no rack, http, page size", func(m *NodeMeta) { m.Rack, m.HTTPAddr, m.PageSize = "", "", 0 }},
		{"ipv6", func(m *NodeMeta) { m.GRPCAddr = "[fd00::1]:7070" }},
		{"dns name", func(m *NodeMeta) { m.GRPCAddr = "cache-0.locus.svc:7070" }},
		{"observer without addresses or block size", func(m *NodeMeta) {
			m.Role, m.GRPCAddr, m.HTTPAddr, m.BlockSize, m.PageSize = RoleObserver, "", "", 0, 0
		}},
		{"page = block", func(m *NodeMeta) { m.PageSize = m.BlockSize }},
		{"replication 1", func(m *NodeMeta) { m.Replication = 1 }},
		{"replication at the limit", func(m *NodeMeta) { m.Replication = MaxReplication }},
		// A cache node of a release that did not announce its replication.
		{"cache without replication", func(m *NodeMeta) { m.Replication = 0 }},
		{"observer without replication", func(m *NodeMeta) { m.Role, m.Replication = RoleObserver, 0 }},
		{"longest fields", func(m *NodeMeta) { *m = maxMeta() }},
	}
	for _, tc := range ok {
		m := fullMeta()
		tc.edit(&m)
		if err := m.Validate(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	bad := []struct {
		name string
		edit func(*NodeMeta)
		want error
	}{
		{"empty id", func(m *NodeMeta) { m.ID = "" }, ErrInvalidMeta},
		{"id too long", func(m *NodeMeta) { m.ID = strings.Repeat("x", MaxIDLen+1) }, ErrInvalidMeta},
		{"id with slash", func(m *NodeMeta) { m.ID = "a/b" }, ErrInvalidMeta},
		{"id with newline", func(m *NodeMeta) { m.ID = "a\nb" }, ErrInvalidMeta},
		{"id non-ascii", func(m *NodeMeta) { m.ID = "nœud" }, ErrInvalidMeta},
		{"rack too long", func(m *NodeMeta) { m.Rack = strings.Repeat("r", MaxRackLen+1) }, ErrInvalidMeta},
		{"rack with space", func(m *NodeMeta) { m.Rack = "rack a" }, ErrInvalidMeta},
		{"unknown role", func(m *NodeMeta) { m.Role = "leader" }, ErrInvalidMeta},
		{"unknown state", func(m *NodeMeta) { m.State = "dead" }, ErrInvalidMeta},
		{"cache without grpc", func(m *NodeMeta) { m.GRPCAddr = "" }, ErrInvalidMeta},
		{"grpc no port", func(m *NodeMeta) { m.GRPCAddr = "10.0.0.1" }, ErrBadAddress},
		{"grpc port 0", func(m *NodeMeta) { m.GRPCAddr = "10.0.0.1:0" }, ErrBadAddress},
		{"grpc port range", func(m *NodeMeta) { m.GRPCAddr = "10.0.0.1:65536" }, ErrBadAddress},
		{"grpc port name", func(m *NodeMeta) { m.GRPCAddr = "10.0.0.1:grpc" }, ErrBadAddress},
		{"grpc no host", func(m *NodeMeta) { m.GRPCAddr = ":7070" }, ErrBadAddress},
		{"grpc wildcard v4", func(m *NodeMeta) { m.GRPCAddr = "0.0.0.0:7070" }, ErrBadAddress},
		{"grpc wildcard v6", func(m *NodeMeta) { m.GRPCAddr = "[::]:7070" }, ErrBadAddress},
		{"grpc unbalanced bracket", func(m *NodeMeta) { m.GRPCAddr = "[::1:7070" }, ErrBadAddress},
		{"http too long", func(m *NodeMeta) { m.HTTPAddr = strings.Repeat("h", MaxAddrLen) + ":1" }, ErrBadAddress},
		{"negative slots", func(m *NodeMeta) { m.Slots = -1 }, ErrInvalidMeta},
		{"too many slots", func(m *NodeMeta) { m.Slots = MaxSlots + 1 }, ErrInvalidMeta},
		{"negative capacity", func(m *NodeMeta) { m.CapacityBytes = -1 }, ErrInvalidMeta},
		{"negative block size", func(m *NodeMeta) { m.BlockSize = -1 }, ErrInvalidMeta},
		{"cache without block size", func(m *NodeMeta) { m.BlockSize = 0 }, ErrInvalidMeta},
		{"negative replication", func(m *NodeMeta) { m.Replication = -1 }, ErrInvalidMeta},
		{"replication over the limit", func(m *NodeMeta) { m.Replication = MaxReplication + 1 }, ErrInvalidMeta},
		{"negative page size", func(m *NodeMeta) { m.PageSize = -1 }, ErrInvalidMeta},
		{"page larger than block", func(m *NodeMeta) { m.PageSize = 2 * m.BlockSize }, ErrInvalidMeta},
		{"page not dividing block", func(m *NodeMeta) { m.PageSize = 3 << 20 }, ErrInvalidMeta},
		{"protocol 0", func(m *NodeMeta) { m.ProtocolVersion = 0 }, ErrInvalidMeta},
	}
	for _, tc := range bad {
		m := fullMeta()
		tc.edit(&m)
		err := m.Validate()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
		if errors.Is(tc.want, ErrBadAddress) && !errors.Is(err, ErrInvalidMeta) {
			t.Errorf("%s: address error %v should also wrap ErrInvalidMeta", tc.name, err)
		}
		if _, merr := m.MarshalBinary(); !errors.Is(merr, tc.want) {
			t.Errorf("%s: MarshalBinary: got %v, want %v", tc.name, merr, tc.want)
		}
	}
}

func TestMetaRoundTrip(t *testing.T) {
	cases := map[string]NodeMeta{
		"full":                      fullMeta(),
		"max":                       maxMeta(),
		"minimal":                   {ID: "a", GRPCAddr: "h:1", BlockSize: 1, ProtocolVersion: 1, State: StateAlive, Role: RoleCache},
		"observer":                  {ID: "sched", Role: RoleObserver, State: StateAlive, ProtocolVersion: 3},
		"observer with replication": {ID: "sched", Role: RoleObserver, State: StateAlive, ProtocolVersion: 1, Replication: 3},
		"replication 1":             {ID: "a", GRPCAddr: "h:1", BlockSize: 1, Replication: 1, ProtocolVersion: 1, State: StateAlive, Role: RoleCache},
	}
	for name, m := range cases {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(b) > memberlist.MetaMaxSize {
			t.Errorf("%s: %d bytes, over memberlist's %d", name, len(b), memberlist.MetaMaxSize)
		}
		var got NodeMeta
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if got != m {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", name, got, m)
		}
	}
	if b, _ := maxMeta().MarshalBinary(); len(b) > 460 {
		t.Errorf("the largest metadata takes %d bytes; keep room under 512 for new fields", len(b))
	} else {
		t.Logf("largest metadata: %d bytes; typical: %d bytes", len(b), len(must(fullMeta().MarshalBinary())))
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// randomMeta draws a valid NodeMeta.
func randomMeta(r *rand.Rand) NodeMeta {
	name := func(max int, optional bool) string {
		const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
		n := r.IntN(max + 1)
		if n == 0 && !optional {
			n = 1
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	m := NodeMeta{
		ID:              name(MaxIDLen, false),
		Rack:            name(MaxRackLen, true),
		Slots:           r.IntN(MaxSlots + 1),
		CapacityBytes:   r.Int64(),
		State:           []State{StateAlive, StateDraining}[r.IntN(2)],
		ProtocolVersion: 1 + r.Uint32N(1<<32-1),
		Role:            []Role{RoleCache, RoleObserver}[r.IntN(2)],
	}
	if m.Role == RoleCache || r.IntN(2) == 0 {
		m.GRPCAddr = name(40, false) + ":" + []string{"1", "7070", "65535"}[r.IntN(3)]
	}
	if r.IntN(2) == 0 {
		m.HTTPAddr = "[fd00::" + []string{"1", "ab"}[r.IntN(2)] + "]:8080"
	}
	if m.Role == RoleCache || r.IntN(2) == 0 {
		m.BlockSize = int64(1+r.IntN(1<<20)) << r.IntN(20)
		if r.IntN(2) == 0 {
			m.PageSize = m.BlockSize >> r.IntN(10)
			if m.PageSize == 0 || m.BlockSize%m.PageSize != 0 {
				m.PageSize = 0
			}
		}
	}
	if m.Role == RoleCache || r.IntN(2) == 0 {
		m.Replication = r.IntN(MaxReplication + 1) // 0: an earlier release
	}
	if r.IntN(4) == 0 {
		m.Slots, m.CapacityBytes = 0, 0
	}
	return m
}

// TestMetaRoundTripRandom: decode(encode(m)) == m for many random valid
// metas, and encode is deterministic.
func TestMetaRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		m := randomMeta(r)
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("case %d: %+v: %v", i, m, err)
		}
		var got NodeMeta
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("case %d: decode %+v: %v", i, m, err)
		}
		if got != m {
			t.Fatalf("case %d: got %+v, want %+v", i, got, m)
		}
		if b2, _ := got.MarshalBinary(); !bytes.Equal(b, b2) {
			t.Fatalf("case %d: re-encoding differs", i)
		}
	}
}

// field builds one wire field.
func field(tag byte, val []byte) []byte {
	b := []byte{tag}
	b = binary.AppendUvarint(b, uint64(len(val)))
	return append(b, val...)
}

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func wire(fields ...[]byte) []byte {
	b := []byte{metaFormat}
	for _, f := range fields {
		b = append(b, f...)
	}
	return b
}

func TestMetaDecodeCorrupt(t *testing.T) {
	id := field(tagID, []byte("n1"))
	pv := field(tagProtocolVersion, uv(1))
	grpc := field(tagGRPCAddr, []byte("h:1"))
	bs := field(tagBlockSize, uv(1<<20))
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, ErrCorruptMeta},
		{"format only", []byte{metaFormat}, ErrCorruptMeta},
		{"future format", append([]byte{2}, wire(id, pv)[1:]...), ErrCorruptMeta},
		{"json", []byte(`{"id":"n1"}`), ErrCorruptMeta},
		{"no id", wire(pv, grpc, bs), ErrCorruptMeta},
		{"no protocol version", wire(id, grpc, bs), ErrCorruptMeta},
		{"duplicate id", wire(id, id, pv, grpc, bs), ErrCorruptMeta},
		{"length past end", wire(id, pv, []byte{tagRack, 50, 'r'}), ErrCorruptMeta},
		{"unterminated length varint", wire(id, pv, []byte{tagRack, 0x80}), ErrCorruptMeta},
		{"tag without length", wire(id, pv, []byte{tagRack}), ErrCorruptMeta},
		{"integer shorter than field", wire(id, pv, grpc, field(tagBlockSize, []byte{0x80, 0x80})), ErrCorruptMeta},
		{"integer with trailing byte", wire(id, pv, grpc, field(tagBlockSize, append(uv(1<<20), 0))), ErrCorruptMeta},
		{"empty integer", wire(id, pv, grpc, field(tagBlockSize, nil)), ErrCorruptMeta},
		{"block size over int64", wire(id, pv, grpc, field(tagBlockSize, uv(1<<63))), ErrCorruptMeta},
		{"slots over limit", wire(id, pv, grpc, bs, field(tagSlots, uv(MaxSlots+1))), ErrCorruptMeta},
		{"protocol over uint32", wire(id, field(tagProtocolVersion, uv(1<<32)), grpc, bs), ErrCorruptMeta},
		{"state code 2", wire(id, pv, grpc, bs, field(tagState, []byte{2})), ErrCorruptMeta},
		{"state two bytes", wire(id, pv, grpc, bs, field(tagState, []byte{1, 1})), ErrCorruptMeta},
		{"role code 9", wire(id, pv, grpc, bs, field(tagRole, []byte{9})), ErrCorruptMeta},
		{"replication over limit", wire(id, pv, grpc, bs, field(tagReplication, uv(MaxReplication+1))), ErrCorruptMeta},
		{"replication over int", wire(id, pv, grpc, bs, field(tagReplication, uv(1<<63))), ErrCorruptMeta},
		{"empty replication", wire(id, pv, grpc, bs, field(tagReplication, nil)), ErrCorruptMeta},
		{"duplicate replication", wire(id, pv, grpc, bs, field(tagReplication, uv(2)), field(tagReplication, uv(2))), ErrCorruptMeta},
		{"too long", append(wire(id, pv, grpc, bs), make([]byte, memberlist.MetaMaxSize)...), ErrCorruptMeta},
		// Well-formed but invalid: ErrInvalidMeta.
		{"empty id", wire(field(tagID, nil), pv, grpc, bs), ErrInvalidMeta},
		{"id with space", wire(field(tagID, []byte("a b")), pv, grpc, bs), ErrInvalidMeta},
		{"protocol 0", wire(id, field(tagProtocolVersion, uv(0)), grpc, bs), ErrInvalidMeta},
		{"cache without grpc", wire(id, pv, bs), ErrInvalidMeta},
		{"cache without block size", wire(id, pv, grpc), ErrInvalidMeta},
		{"bad grpc", wire(id, pv, field(tagGRPCAddr, []byte("nope")), bs), ErrBadAddress},
	}
	for _, tc := range tests {
		var m NodeMeta
		err := m.UnmarshalBinary(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
		if m != (NodeMeta{}) {
			t.Errorf("%s: a failed decode changed the target: %+v", tc.name, m)
		}
	}
}

// TestMetaDecodeSkipsUnknownFields: fields from a later release (tags this
// build does not know, tag 0 included) are skipped.
func TestMetaDecodeSkipsUnknownFields(t *testing.T) {
	want := fullMeta()
	b := must(want.MarshalBinary())
	b = append(b, field(200, []byte("future field"))...)
	b = append(b, field(0, nil)...)
	b = append(b, field(maxKnownTag+1, uv(42))...)
	var got NodeMeta
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestMetaBootIsBackwardCompatible: Boot travels as a field appended after
// all the others, so an earlier release skips it and reads the rest
// unchanged, and an earlier release's metadata decodes with Boot 0 (no
// restart is ever inferred from it).
func TestMetaBootIsBackwardCompatible(t *testing.T) {
	without := fullMeta()
	with := without
	with.Boot = 0x1234_5678_9abc_def0
	old := must(without.MarshalBinary())
	cur := must(with.MarshalBinary())
	if want := append(append([]byte(nil), old...), field(tagBoot, uv(with.Boot))...); !bytes.Equal(cur, want) {
		t.Errorf("encoding with boot:\n got % x\nwant % x (the earlier encoding plus one field)", cur, want)
	}
	var got NodeMeta
	if err := got.UnmarshalBinary(cur); err != nil || got != with {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, with)
	}
	got = NodeMeta{}
	if err := got.UnmarshalBinary(old); err != nil || got.Boot != 0 {
		t.Errorf("an earlier release's metadata: Boot %d, %v; want 0", got.Boot, err)
	}
}

// TestMetaReplicationIsBackwardCompatible: Replication travels as a field
// appended after those of the first release, so a decoder of that release,
// which skips tags it does not know (TestMetaDecodeSkipsUnknownFields),
// reads every other field unchanged; and that release's metadata, which has
// no Replication, decodes here with Replication 0 (not checked by
// compatible).
func TestMetaReplicationIsBackwardCompatible(t *testing.T) {
	with := fullMeta()
	without := with
	without.Replication = 0
	old := must(without.MarshalBinary())
	cur := must(with.MarshalBinary())
	if want := append(append([]byte(nil), old...), field(tagReplication, uv(uint64(with.Replication)))...); !bytes.Equal(cur, want) {
		t.Errorf("encoding with replication:\n got % x\nwant % x (the earlier encoding plus one field)", cur, want)
	}
	// An earlier release's encoding (the fields it knew, in its order).
	earlier := wire(
		field(tagID, []byte(with.ID)), field(tagRack, []byte(with.Rack)),
		field(tagGRPCAddr, []byte(with.GRPCAddr)), field(tagHTTPAddr, []byte(with.HTTPAddr)),
		field(tagSlots, uv(uint64(with.Slots))), field(tagCapacityBytes, uv(uint64(with.CapacityBytes))),
		field(tagState, []byte{1}), field(tagBlockSize, uv(uint64(with.BlockSize))),
		field(tagPageSize, uv(uint64(with.PageSize))), field(tagProtocolVersion, uv(uint64(with.ProtocolVersion))),
	)
	var got NodeMeta
	if err := got.UnmarshalBinary(earlier); err != nil {
		t.Fatalf("decoding an earlier release's metadata: %v", err)
	}
	if got != without {
		t.Errorf("earlier release's metadata:\n got %+v\nwant %+v", got, without)
	}
	if err := compatible(with, got, false); err != nil {
		t.Errorf("a member that announces no replication is refused: %v", err)
	}
}

// TestMetaDecodeNeverPanics: every truncation and many random mutations of
// valid encodings decode to an error or a valid NodeMeta, never a panic.
func TestMetaDecodeNeverPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		b := must(randomMeta(r).MarshalBinary())
		for n := range len(b) {
			var m NodeMeta
			if err := m.UnmarshalBinary(b[:n]); err == nil {
				if verr := m.Validate(); verr != nil {
					t.Fatalf("case %d: truncation to %d decoded an invalid meta: %v", i, n, verr)
				}
			}
		}
		for range 20 {
			c := append([]byte(nil), b...)
			for range 1 + r.IntN(3) {
				c[r.IntN(len(c))] = byte(r.Uint32())
			}
			var m NodeMeta
			if err := m.UnmarshalBinary(c); err == nil {
				if verr := m.Validate(); verr != nil {
					t.Fatalf("case %d: mutation decoded an invalid meta: %v", i, verr)
				}
			} else if !errors.Is(err, ErrCorruptMeta) && !errors.Is(err, ErrInvalidMeta) {
				t.Fatalf("case %d: undocumented error %v", i, err)
			}
		}
	}
}

func FuzzMetaDecode(f *testing.F) {
	f.Add(must(fullMeta().MarshalBinary()))
	f.Add(must(maxMeta().MarshalBinary()))
	f.Add([]byte{metaFormat, tagID, 0x80})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m NodeMeta
		err := m.UnmarshalBinary(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptMeta) && !errors.Is(err, ErrInvalidMeta) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded an invalid meta: %v", err)
		}
		b2, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var m2 NodeMeta
		if err := m2.UnmarshalBinary(b2); err != nil || m2 != m {
			t.Fatalf("re-decode: %+v, %v; want %+v", m2, err, m)
		}
	})
}

func TestMetaJSON(t *testing.T) {
	b, err := json.Marshal(fullMeta())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"cache-0.locus","rack":"rack-a","grpc_addr":"10.0.0.1:7070","http_addr":"10.0.0.1:7080","slots":16,` +
		`"capacity_bytes":549755813888,"state":"draining","block_size":134217728,"replication":2,"page_size":1048576,"protocol_version":1,"role":"cache"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{128 << 20, "128 MiB"}, {64 << 20, "64 MiB"}, {1 << 30, "1 GiB"}, {3 << 40, "3 TiB"},
		{4096, "4 KiB"}, {1536 << 10, "1536 KiB"}, {1000, "1000 bytes"}, {0, "0 bytes"}, {-1, "-1 bytes"},
	} {
		if got := FormatBytes(tc.in); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCompatible(t *testing.T) {
	cache := fullMeta()
	tests := []struct {
		name        string
		local, peer func(*NodeMeta)
		field       string
	}{
		{"same", nil, nil, ""},
		{"block size", nil, func(m *NodeMeta) { m.BlockSize = 64 << 20; m.PageSize = 0 }, "block size"},
		{"protocol", nil, func(m *NodeMeta) { m.ProtocolVersion = 2 }, "protocol version"},
		{"protocol checked first", nil, func(m *NodeMeta) { m.ProtocolVersion = 2; m.BlockSize = 64 << 20; m.PageSize = 0 }, "protocol version"},
		{"observer without block size", nil, func(m *NodeMeta) { m.Role = RoleObserver; m.BlockSize = 0; m.PageSize = 0 }, ""},
		{"local observer without block size", func(m *NodeMeta) { m.Role = RoleObserver; m.BlockSize = 0; m.PageSize = 0 }, nil, ""},
		{"observer with other block size", nil, func(m *NodeMeta) { m.Role = RoleObserver; m.BlockSize = 1 << 20; m.PageSize = 0 }, "block size"},
		{"replication", nil, func(m *NodeMeta) { m.Replication = 1 }, "replication"},
		{"block size checked before replication", nil, func(m *NodeMeta) { m.Replication = 1; m.BlockSize = 64 << 20; m.PageSize = 0 }, "block size"},
		{"peer without replication (earlier release)", nil, func(m *NodeMeta) { m.Replication = 0 }, ""},
		{"observer without replication", nil, func(m *NodeMeta) { m.Role = RoleObserver; m.Replication = 0 }, ""},
		{"observer with other replication", nil, func(m *NodeMeta) { m.Role = RoleObserver; m.Replication = 3 }, "replication"},
		{"draining and other capacity are fine", nil, func(m *NodeMeta) { m.State = StateDraining; m.CapacityBytes = 1; m.PageSize = 4096 }, ""},
	}
	for _, tc := range tests {
		local, peer := cache, cache
		peer.ID = "peer"
		if tc.local != nil {
			tc.local(&local)
		}
		if tc.peer != nil {
			tc.peer(&peer)
		}
		for _, dir := range []struct {
			a, b NodeMeta
		}{{local, peer}, {peer, local}} {
			err := compatible(dir.a, dir.b, false)
			if tc.field == "" {
				if err != nil {
					t.Errorf("%s: %v", tc.name, err)
				}
				continue
			}
			var ie *IncompatibleError
			if !errors.As(err, &ie) || !errors.Is(err, ErrIncompatible) || ie.Field != tc.field {
				t.Errorf("%s: got %v, want an IncompatibleError on %s (the check must be symmetric)", tc.name, err, tc.field)
			}
		}
	}
}

func TestIncompatibleErrorMessages(t *testing.T) {
	joining := &IncompatibleError{Field: "block size", Local: 64 << 20, Remote: 128 << 20, Peer: "n1", Joining: true}
	want := `membership: this node's block size 64 MiB differs from the cluster's 128 MiB (member "n1"): start this node with --block-size=134217728 (128 MiB), the same on every node`
	if got := joining.Error(); got != want {
		t.Errorf("joining:\n got %s\nwant %s", got, want)
	}
	admitting := &IncompatibleError{Field: "block size", Local: 128 << 20, Remote: 64 << 20, Peer: "n6"}
	want = `membership: refusing member "n6": its block size 64 MiB differs from this cluster's 128 MiB`
	if got := admitting.Error(); got != want {
		t.Errorf("admitting:\n got %s\nwant %s", got, want)
	}
	repl := &IncompatibleError{Field: "replication", Local: 1, Remote: 2, Peer: "n1", Joining: true}
	want = `membership: this node's replication 1 differs from the cluster's 2 (member "n1"): start this node with --replication=2, the same on every node (it is the preference-list length: nodes that disagree on it disagree on which node caches a block)`
	if got := repl.Error(); got != want {
		t.Errorf("replication, joining:\n got %s\nwant %s", got, want)
	}
	repl = &IncompatibleError{Field: "replication", Local: 2, Remote: 3, Peer: "n7"}
	want = `membership: refusing member "n7": its replication 3 differs from this cluster's 2 (start it with --replication=2)`
	if got := repl.Error(); got != want {
		t.Errorf("replication, admitting:\n got %s\nwant %s", got, want)
	}
	proto := &IncompatibleError{Field: "protocol version", Local: 2, Remote: 1, Peer: "n1", Joining: true}
	want = `membership: this node's protocol version 2 differs from the cluster's 1 (member "n1"): run the same Locus release on every node`
	if got := proto.Error(); got != want {
		t.Errorf("protocol:\n got %s\nwant %s", got, want)
	}
}
