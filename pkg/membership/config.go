package membership

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"time"

	"github.com/locuscache/locus/pkg/ring"
)

// DefaultBindAddr is the gossip address New binds when Config.BindAddr is
// empty (DESIGN.md: --gossip-addr defaults to 127.0.0.1:7946).
const DefaultBindAddr = "127.0.0.1:7946"

// DefaultBroadcastTimeout bounds how long Leave and UpdateMeta wait for their
// broadcast to reach a peer when the context has no deadline.
const DefaultBroadcastTimeout = 5 * time.Second

// Config configures a Membership. The zero value of every field except Meta
// is usable: New fills defaults (documented per field) and rejects impossible
// values with an error wrapping ErrInvalidConfig, ErrInvalidMeta,
// ErrBadAddress, ErrKeyFile or ErrKeyLength.
type Config struct {
	// Meta is what this node announces. Meta.ID is required and becomes the
	// memberlist node name. Zero State/Role mean alive/cache; a zero
	// ProtocolVersion becomes ProtocolVersion; a cache node's zero BlockSize
	// becomes DefaultBlockSize and its zero Replication DefaultReplication.
	// Meta.BlockSize, Meta.Replication and Meta.ProtocolVersion are also
	// this node's cluster settings: members that differ are refused.
	Meta NodeMeta

	// BindAddr is the gossip listen address, "ip:port", used for both UDP
	// and TCP. Default DefaultBindAddr. Port 0 picks a free port (see
	// Membership.GossipAddr). The host must be an IP literal.
	BindAddr string

	// AdvertiseAddr is the "ip:port" other members use to reach this node,
	// when it differs from BindAddr (NAT, or BindAddr 0.0.0.0). Optional;
	// port 0 means the bound port.
	AdvertiseAddr string

	// KeyFile names a file holding the gossip encryption key (see ParseKey).
	// Optional; empty means gossip is not encrypted. Mutually exclusive with
	// Key.
	KeyFile string
	// Key is the gossip encryption key itself (16, 24 or 32 bytes), for
	// callers that do not keep it in a file. Mutually exclusive with KeyFile.
	Key []byte

	// Tuning sets the failure detector and gossip timings. The zero value
	// means LANTuning(); individual zero fields take LANTuning's value. Use
	// LoopbackTuning() for tests and single-host clusters.
	Tuning Tuning

	// Ring configures the rings this package builds for each View. Every
	// member must use the same Ring config: the View epoch fingerprints the
	// membership, not this config. Zero value = pkg/ring defaults.
	Ring ring.Config

	// Logger receives this package's messages and memberlist's (whose
	// "[DEBUG]", "[INFO]", "[WARN]" and "[ERR]" lines become slog levels).
	// Nil discards everything: memberlist is chatty.
	Logger *slog.Logger
}

// Tuning holds memberlist's timing knobs that decide how fast a failure is
// detected and how fast news spreads. See LANTuning and LoopbackTuning for
// what each preset buys.
//
// How long until a crashed member is declared dead, roughly:
//
//	time until some survivor probes it   ~ ProbeInterval (each member probes one peer per interval)
//	+ failed probe                        ProbeInterval (direct ping, ProbeTimeout, then indirect pings)
//	+ suspicion timeout                   between SuspicionMult*ProbeInterval (enough peers confirmed)
//	                                      and SuspicionMaxTimeoutMult times that (nobody confirmed)
//	+ gossip of the dead message          a few GossipIntervals
//
// (memberlist scales the suspicion timeout by max(1, log10(members)).)
type Tuning struct {
	// ProbeInterval is the time between failure-detector probes of one
	// random peer. Lower detects faster and costs more packets.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a direct probe waits for an ack before
	// asking other members to probe indirectly. Must be below
	// ProbeInterval; set it near the 99th-percentile round trip plus
	// scheduling noise.
	ProbeTimeout time.Duration
	// IndirectChecks is how many members are asked to probe a peer that
	// missed a direct probe.
	IndirectChecks int
	// SuspicionMult scales how long a suspect member has to refute before it
	// is declared dead: SuspicionMult * ProbeInterval (at most 10 members).
	SuspicionMult int
	// SuspicionMaxTimeoutMult bounds the suspicion timeout when no other
	// member confirms the suspicion: SuspicionMaxTimeoutMult times the
	// above.
	SuspicionMaxTimeoutMult int
	// GossipInterval is the time between gossip rounds (state changes
	// piggyback on probes too). GossipNodes is how many peers each round
	// reaches.
	GossipInterval time.Duration
	GossipNodes    int
	// GossipToTheDeadTime is how long we keep gossiping to a dead member
	// so it can refute, and how long a dead member is remembered.
	GossipToTheDeadTime time.Duration
	// RetransmitMult scales how many times a broadcast is retransmitted:
	// RetransmitMult * ceil(log10(members+1)).
	RetransmitMult int
	// PushPullInterval is the time between full state exchanges with one
	// random peer over TCP (anti-entropy; a join is one such exchange).
	PushPullInterval time.Duration
	// TCPTimeout bounds a TCP state exchange (and each Join attempt).
	TCPTimeout time.Duration
	// DeadNodeReclaimTime is how long after a member died its id may be
	// reused from a different address (a pod restarted with a new IP);
	// until then memberlist drops that id's alive messages from any other
	// address. (A member that left is not held back.) A node restarting
	// at a new address sooner waits in Join for this to pass: see
	// Membership.Join. Shorter lets such a restart in sooner; it is what
	// stops two processes started with one id from taking the id from
	// each other each time one of them is declared dead.
	DeadNodeReclaimTime time.Duration
}

// newAddressWait bounds Join's wait for a cluster of n members (this
// node's guess) to accept this node at a new address while it remembers a
// previous incarnation of its id elsewhere: the failure detector's worst
// case (the incarnation may not be declared dead yet; memberlist scales
// suspicion by log10 of the cluster size above 10), then
// DeadNodeReclaimTime, then a margin for the exchanges and for the news
// of the death reaching every member. LANTuning: 15.4 s with up to 10
// members (7.4 + 5 + 3); LoopbackTuning: 5.3 s. The wait itself is
// usually much shorter: what is left of DeadNodeReclaimTime since the
// death was declared, plus the failure detector's delay when the node
// restarted before that.
func (t Tuning) newAddressWait(n int) time.Duration {
	scale := math.Max(1, math.Log10(float64(max(n, 1))))
	suspicion := time.Duration(float64(time.Duration(t.SuspicionMult*t.SuspicionMaxTimeoutMult)*t.ProbeInterval) * scale)
	detect := 2*t.ProbeInterval + suspicion + 4*t.GossipInterval
	margin := 4*t.ProbeInterval + 10*t.GossipInterval
	return detect + t.DeadNodeReclaimTime + margin
}

// LANTuning is the default: memberlist's LAN defaults tightened for a cache,
// where a dead owner costs origin reads until it is detected. About 3-7 s to
// declare a crashed member dead in a cluster of up to 10 members (up to 1 s
// to probe and fail, then 2 s of suspicion when peers confirm, 6 s when none
// do; 3.1 s measured with 5 members on loopback). memberlist's LAN defaults
// take 5-25 s.
func LANTuning() Tuning {
	return Tuning{
		ProbeInterval:           500 * time.Millisecond, // memberlist LAN: 1 s
		ProbeTimeout:            250 * time.Millisecond, // LAN RTT is well under this
		IndirectChecks:          3,
		SuspicionMult:           4, // 2 s suspicion with confirmations
		SuspicionMaxTimeoutMult: 3, // 6 s without (memberlist LAN: 6x)
		GossipInterval:          100 * time.Millisecond,
		GossipNodes:             3,
		GossipToTheDeadTime:     15 * time.Second,
		RetransmitMult:          4,
		PushPullInterval:        15 * time.Second, // memberlist LAN: 30 s
		TCPTimeout:              5 * time.Second,
		DeadNodeReclaimTime:     5 * time.Second, // memberlist: never
	}
}

// LoopbackTuning is for members sharing one host (tests, `locusctl` local
// clusters): loopback round trips are microseconds, so probes can be short
// and frequent. A crashed member is declared dead in about 1-1.5 s (at most
// about 3 s: 0.4 s to probe and fail, then 0.8 s of suspicion, 2.4 s when no
// peer confirms it); TestMultiProcess measures it for kill -9.
//
// memberlist's own DefaultLocalConfig suspects a member for 3 s, and for up
// to 18 s (SuspicionMaxTimeoutMult 6) when peers do not confirm in time:
// about 20 s in the worst case, 4.6-4.8 s measured with 5 members in one
// process.
func LoopbackTuning() Tuning {
	return Tuning{
		ProbeInterval:           200 * time.Millisecond,
		ProbeTimeout:            100 * time.Millisecond, // headroom for GC pauses and -race on a busy box
		IndirectChecks:          2,
		SuspicionMult:           4, // 0.8 s suspicion with 2 confirmations
		SuspicionMaxTimeoutMult: 3, // 2.4 s without
		GossipInterval:          50 * time.Millisecond,
		GossipNodes:             3,
		GossipToTheDeadTime:     2 * time.Second,
		RetransmitMult:          4,
		PushPullInterval:        500 * time.Millisecond, // repairs news that gossip missed during concurrent joins
		TCPTimeout:              5 * time.Second,        // streams only (joins, push/pull): generous for a loaded test box
		DeadNodeReclaimTime:     time.Second,
	}
}

// withDefaults fills zero fields from LANTuning and checks the result.
func (t Tuning) withDefaults() (Tuning, error) {
	d := LANTuning()
	fillDur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	fillInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fillDur(&t.ProbeInterval, d.ProbeInterval)
	fillDur(&t.ProbeTimeout, d.ProbeTimeout)
	fillInt(&t.IndirectChecks, d.IndirectChecks)
	fillInt(&t.SuspicionMult, d.SuspicionMult)
	fillInt(&t.SuspicionMaxTimeoutMult, d.SuspicionMaxTimeoutMult)
	fillDur(&t.GossipInterval, d.GossipInterval)
	fillInt(&t.GossipNodes, d.GossipNodes)
	fillDur(&t.GossipToTheDeadTime, d.GossipToTheDeadTime)
	fillInt(&t.RetransmitMult, d.RetransmitMult)
	fillDur(&t.PushPullInterval, d.PushPullInterval)
	fillDur(&t.TCPTimeout, d.TCPTimeout)
	fillDur(&t.DeadNodeReclaimTime, d.DeadNodeReclaimTime)

	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"ProbeInterval", t.ProbeInterval}, {"ProbeTimeout", t.ProbeTimeout},
		{"GossipInterval", t.GossipInterval}, {"GossipToTheDeadTime", t.GossipToTheDeadTime},
		{"PushPullInterval", t.PushPullInterval}, {"TCPTimeout", t.TCPTimeout},
		{"DeadNodeReclaimTime", t.DeadNodeReclaimTime},
	} {
		if f.v < 0 {
			return t, fmt.Errorf("%w: Tuning.%s is negative (%v)", ErrInvalidConfig, f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"IndirectChecks", t.IndirectChecks}, {"SuspicionMult", t.SuspicionMult},
		{"SuspicionMaxTimeoutMult", t.SuspicionMaxTimeoutMult}, {"GossipNodes", t.GossipNodes},
		{"RetransmitMult", t.RetransmitMult},
	} {
		if f.v < 0 {
			return t, fmt.Errorf("%w: Tuning.%s is negative (%d)", ErrInvalidConfig, f.name, f.v)
		}
	}
	if t.ProbeTimeout >= t.ProbeInterval {
		return t, fmt.Errorf("%w: Tuning.ProbeTimeout %v must be below ProbeInterval %v (indirect probes need the rest of the interval)",
			ErrInvalidConfig, t.ProbeTimeout, t.ProbeInterval)
	}
	return t, nil
}

// validated is a Config after withDefaults: parsed addresses and the key.
type validated struct {
	Config
	bindIP      string
	bindPort    int
	advertiseIP string
	advPort     int
	key         []byte
}

// withDefaults fills defaults and checks every field; see the field docs.
func (c Config) withDefaults() (validated, error) {
	v := validated{Config: c}
	v.Meta = c.Meta.withDefaults()
	for v.Meta.Boot == 0 {
		v.Meta.Boot = rand.Uint64() // this process's start (NodeMeta.Boot)
	}
	if err := v.Meta.Validate(); err != nil {
		return v, err
	}
	if v.BindAddr == "" {
		v.BindAddr = DefaultBindAddr
	}
	var err error
	if v.bindIP, v.bindPort, err = parseIPPort("bind", v.BindAddr); err != nil {
		return v, err
	}
	if v.AdvertiseAddr != "" {
		if v.advertiseIP, v.advPort, err = parseIPPort("advertise", v.AdvertiseAddr); err != nil {
			return v, err
		}
	}
	switch {
	case v.KeyFile != "" && v.Key != nil:
		return v, fmt.Errorf("%w: set KeyFile or Key, not both", ErrInvalidConfig)
	case v.KeyFile != "":
		if v.key, err = ReadKeyFile(v.KeyFile); err != nil {
			return v, err
		}
	case v.Key != nil:
		if !validKeyLen(len(v.Key)) {
			return v, fmt.Errorf("%w: Config.Key is %d bytes", ErrKeyLength, len(v.Key))
		}
		v.key = append([]byte(nil), v.Key...)
	}
	if v.Tuning, err = v.Tuning.withDefaults(); err != nil {
		return v, err
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v, nil
}

// parseIPPort parses "ip:port" with port 0..65535. memberlist needs IP
// literals for its bind and advertise addresses.
func parseIPPort(what, addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %s address %q: %v (want ip:port, e.g. 127.0.0.1:7946)", ErrBadAddress, what, addr, err)
	}
	if net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("%w: %s address %q: host %q is not an IP literal (want ip:port, e.g. 127.0.0.1:7946)", ErrBadAddress, what, addr, host)
	}
	p, err := parsePort(port, true)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %s address %q: %v", ErrBadAddress, what, addr, err)
	}
	return host, p, nil
}
