package membership

import (
	"errors"
	"testing"
	"time"
)

func TestTuningDefaults(t *testing.T) {
	got, err := Tuning{}.withDefaults()
	if err != nil || got != LANTuning() {
		t.Errorf("zero Tuning: got %+v, %v; want LANTuning", got, err)
	}
	got, err = Tuning{ProbeInterval: 2 * time.Second}.withDefaults()
	if err != nil || got.ProbeInterval != 2*time.Second || got.SuspicionMult != LANTuning().SuspicionMult {
		t.Errorf("partial Tuning: got %+v, %v", got, err)
	}
	for name, tu := range map[string]Tuning{"LAN": LANTuning(), "loopback": LoopbackTuning()} {
		if got, err := tu.withDefaults(); err != nil || got != tu {
			t.Errorf("%s preset: got %+v, %v", name, got, err)
		}
	}
	// The loopback preset must detect a crash within 5 s even in the worst
	// case the formula allows: probe round + failed probe + max suspicion.
	lo := LoopbackTuning()
	worst := 2*lo.ProbeInterval + time.Duration(lo.SuspicionMult*lo.SuspicionMaxTimeoutMult)*lo.ProbeInterval + 4*lo.GossipInterval
	if worst > 4*time.Second {
		t.Errorf("LoopbackTuning's worst-case detection bound is %v, want well under 5 s", worst)
	}
	bad := map[string]Tuning{
		"timeout = interval":  {ProbeInterval: time.Second, ProbeTimeout: time.Second},
		"timeout > interval":  {ProbeInterval: time.Second, ProbeTimeout: 2 * time.Second},
		"negative interval":   {ProbeInterval: -time.Second},
		"negative gossip":     {GossipInterval: -1},
		"negative suspicion":  {SuspicionMult: -1},
		"negative retransmit": {RetransmitMult: -2},
		"negative reclaim":    {DeadNodeReclaimTime: -1},
	}
	for name, tu := range bad {
		if _, err := tu.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	v, err := Config{Meta: NodeMeta{ID: "a", GRPCAddr: "127.0.0.1:7070"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if v.BindAddr != DefaultBindAddr || v.bindIP != "127.0.0.1" || v.bindPort != 7946 {
		t.Errorf("bind: %q %q %d", v.BindAddr, v.bindIP, v.bindPort)
	}
	m := v.Meta
	if m.State != StateAlive || m.Role != RoleCache || m.ProtocolVersion != ProtocolVersion || m.BlockSize != DefaultBlockSize || m.Replication != DefaultReplication {
		t.Errorf("meta defaults: %+v", m)
	}
	if v.Logger == nil || v.Tuning != LANTuning() || v.key != nil {
		t.Errorf("defaults: logger %v tuning %+v key %x", v.Logger, v.Tuning, v.key)
	}
	// Observers keep a zero block size and replication: they accept the
	// cluster's.
	v, err = Config{Meta: NodeMeta{ID: "s", Role: RoleObserver}}.withDefaults()
	if err != nil || v.Meta.BlockSize != 0 || v.Meta.Replication != 0 {
		t.Errorf("observer: %+v, %v", v.Meta, err)
	}
	// An explicit key is copied.
	key := make([]byte, 16)
	v, err = Config{Meta: NodeMeta{ID: "a", GRPCAddr: "h:1"}, Key: key}.withDefaults()
	key[0] = 1
	if err != nil || len(v.key) != 16 || v.key[0] != 0 {
		t.Errorf("key: %x, %v", v.key, err)
	}
	v, err = Config{Meta: NodeMeta{ID: "a", GRPCAddr: "h:1"}, BindAddr: "[::1]:0", AdvertiseAddr: "10.1.2.3:0"}.withDefaults()
	if err != nil || v.bindIP != "::1" || v.bindPort != 0 || v.advertiseIP != "10.1.2.3" || v.advPort != 0 {
		t.Errorf("ipv6 bind, advertise: %+v, %v", v, err)
	}
}

// TestNewAddressWait pins the bound on Join's wait after a restart at a new
// address that config.go's docs quote.
func TestNewAddressWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		tu   Tuning
		n    int
		want time.Duration
	}{
		{"LAN", LANTuning(), 3, 15400 * time.Millisecond},
		{"LAN, 10 members", LANTuning(), 10, 15400 * time.Millisecond},
		{"LAN, 100 members", LANTuning(), 100, 21400 * time.Millisecond}, // suspicion x log10(100)
		{"loopback", LoopbackTuning(), 3, 5300 * time.Millisecond},
	} {
		if got := tc.tu.newAddressWait(tc.n); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
