// Package membership is Locus's cluster membership: who is in the cluster,
// what each member announced about itself, and the consistent-hash ring built
// from it. It runs on hashicorp/memberlist (SWIM gossip with a failure
// detector) and publishes immutable Views.
//
// # Members and what they announce
//
// Every process in the gossip is a member and announces a NodeMeta: its id
// (also the memberlist node name), rack, gRPC and HTTP addresses, executor
// slots, cache capacity, state (alive or draining), block size,
// replication, page size, protocol version, role and boot (a random number
// drawn when the process starts, so that a restart quicker than the failure
// detector is still seen). The metadata travels in memberlist's node
// metadata, in a compact versioned encoding (NodeMeta.MarshalBinary): about
// 85 bytes typically, 457 with every field at its length limit, within
// memberlist's 512. Decoders skip fields they do not know, so later
// releases can add fields (Replication and Boot were added that way: a
// member of an earlier release announces neither, and is not checked on
// them).
//
// Roles: cache nodes own ranges of the ring. Observers (the scheduler,
// locusctl) join the gossip to watch it and own nothing; an observer may
// leave BlockSize and Replication 0 and learn the cluster's from
// View.BlockSize and View.Replication. A cache node that announces no
// capacity (its cache passes every read through: no slab fitted on its
// disk and it has no memory tier) owns nothing either while any cache
// node announces some: it would never cache its share of the blocks. It
// stays a member and may run tasks, reading through the owners.
//
// # Who may join
//
// The local node's BlockSize, Replication and ProtocolVersion are the
// cluster settings: the block size and the replication (the length of each
// block's preference list, DefaultReplication = 2) together fix which nodes
// cache a block and where its tasks count as DATA_LOCAL, so every member
// must agree on them. A member whose block size, replication or protocol
// version differs is refused, and so
// is a member claiming an id that a live member at another address already
// has, or a member whose metadata does not decode. Refusal happens in both
// directions: the newcomer checks the members it is about to merge and the
// cluster checks the newcomer (memberlist's MergeDelegate), and every alive
// message is checked too (AliveDelegate), so a misfit never enters anybody's
// member list. An observer, which declares no block size or replication,
// checks its peers against the values of the cache members it knows, so
// a misfit joining through the scheduler's gossip address, or a wrong
// --join pointing the scheduler at another cluster, stays out of its view
// too. Join on the misfit returns the reason, for example
//
//	membership: this node's block size 64 MiB differs from the cluster's 128 MiB
//	(member "n1"): start this node with --block-size=134217728 (128 MiB), the same on every node
//
// or, for a node started with --replication=1 in a cluster of 2,
//
//	membership: this node's replication 1 differs from the cluster's 2
//	(member "n1"): start this node with --replication=2, the same on every node (...)
//
// (an *IncompatibleError, errors.Is ErrIncompatible; or ErrDuplicateID).
//
// Two cache nodes started with one id that join through different
// members at the same time are both let in (neither seed lists the other
// yet). Once they hear of each other and the other has answered pings
// for 5 s (a duplicate the cluster refused answers too, until it exits
// at its failed Join, and must not count), the one with the larger Boot
// (a random number; NodeMeta.Boot) shuts its Membership down (Done
// closes, Err wraps ErrDuplicateID; the cache node exits), and the
// members that listed it move to the other. Observers only log such a
// conflict.
//
// # Views, epochs and the ring
//
// A Membership publishes a fresh View after every join, leave and metadata
// update it learns of, through an atomic pointer: View never blocks and
// returns a snapshot that is never modified. View.Changed returns a channel
// closed when a newer View replaces it; WaitFor waits for a condition.
//
// The ring (pkg/ring) holds the cache members, alive and draining, each with
// weight 1. A draining member keeps its ownership until it leaves, so its
// cache still serves peer reads while work moves away; schedulers must not
// place new tasks on it (Member.Placeable). Observers never own ranges.
//
// View.Epoch is a fingerprint of the ring's membership (the sorted ids, racks
// and weights of the ring members), not a counter: members that see the same
// ring members compute the same epoch independently, and equal epochs mean
// equal rings, provided every member uses the same Config.Ring. A member
// draining or an observer coming and going changes the View (and its local
// Generation) but not the Epoch.
//
// # Lifecycle
//
//	m, err := membership.New(cfg)   // binds the gossip port; a one-member cluster
//	_, err = m.Join(seeds)          // meet the others (skip for the first node)
//	v := m.View()                   // read, as often as you like
//	err = m.SetState(ctx, membership.StateDraining)
//	err = m.Leave(ctx)              // goodbye, then shut down (Shutdown: no goodbye)
//
// # Failure detection
//
// memberlist probes one random peer per ProbeInterval; a peer that misses a
// probe (and indirect probes through others) becomes suspect and is declared
// dead after a suspicion timeout that shrinks as other members confirm the
// suspicion. Tuning holds the knobs; LANTuning (the default) declares a
// crashed member dead in about 3-7 s, LoopbackTuning in about 1-1.5 s and
// at most about 3 s (the multi-process test measures 1.1-1.6 s for kill -9
// among 5 processes). memberlist's DefaultLocalConfig can take about 20 s:
// when no peer confirms a suspicion in time it waits SuspicionMaxTimeoutMult
// (6) times its 3 s suspicion timeout. A member that leaves (Leave) is
// dropped at once.
//
// # Restarting with the same id at a new address
//
// A node that restarts with its id (a pod recreated with a new IP, a
// process on a new port) finds the cluster remembering its previous
// incarnation at the old address for a while: as a live member until the
// failure detector declares it dead (a crash), then as a dead one. memberlist
// moves a dead member's id to a new address only Tuning.DeadNodeReclaimTime
// after the death (a member that left is moved at once) and drops the
// newcomer's alive messages until then; nothing tells the members again
// before the next push/pull, so the node used to see the cluster while the
// cluster did not see it, for up to PushPullInterval (16-28 s measured
// with LANTuning).
//
// So Join, when a seed's list names this node's id at another address,
// waits until every member it can reach lists this node at its own: it
// exchanges state with the members (seeds first) every ProbeInterval, each
// exchange being also a new try to be let in, and logs at Info why it
// waits and when it is done. A previous incarnation still listed alive is
// pinged first: a process that answers for this id is another live node
// (ErrDuplicateID at once); a silent one is this node's crashed
// predecessor, and Join waits for the failure detector too. The wait is
// bounded by the failure detector's worst case plus DeadNodeReclaimTime
// and a margin (15.4 s with LANTuning and up to 10 members, 5.3 s with
// LoopbackTuning); past it Join fails with ErrJoin naming the members that
// still refuse the new address, and a later Join resumes the wait. A
// member that never answers this node (alive in the gossip, unreachable
// from here) refuses nothing: past the bound Join returns and logs a
// warning naming it. In
// practice a restart after a Leave is let in at once, one after a crash
// waits what is left of DeadNodeReclaimTime (5 s with LANTuning) since
// the death was declared, plus the failure detector's delay if it
// restarted before that. Members that see such a restart log it at Info
// ("back at a new address") rather than as two processes with one id.
//
// # Gossip encryption
//
// Config.KeyFile names a file holding a 16, 24 or 32-byte AES key, base64 or
// raw (see ParseKey). All members must share it; a member without it, or with
// another key, cannot join (ErrJoin).
//
// # Threading
//
// All Membership methods are safe for concurrent use. memberlist calls the
// package's delegate with its internal lock held; the delegate only decodes
// metadata and updates a table, then wakes a publisher goroutine that builds
// rings and publishes Views, so slow consumers never stall gossip and
// failure detection. Views are immutable and may be shared freely.
//
// memberlist's log lines go to Config.Logger (a *slog.Logger) at their
// levels; by default they are discarded.
package membership
