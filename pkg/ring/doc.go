// Package ring is Locus's consistent-hash ring: it maps a key (a block of an
// object, see BlockKey) to an ordered preference list of distinct cache
// nodes. The owner, the first node of the list, caches the block and is where
// the scheduler sends the tasks that read it; the next nodes are its replicas
// and fallbacks.
//
// # Points on a circle
//
// Positions are 32-bit numbers read as a circle: after 2^32-1 comes 0 again.
// Each node is placed on the circle many times: its virtual nodes ("vnodes",
// or points) sit at the high 32 bits of Hash("ID#0"), Hash("ID#1"), ...
// A node of weight 1 gets Config.VNodes points (DefaultVNodes, 2048); a node
// of weight w gets round(w*VNodes), at least one. Many small points instead
// of one big one is what spreads a node's share evenly round the circle and
// keeps it close to its fair fraction.
//
// A key is hashed once, and its 64-bit hash gives it two probes: positions
// p1 (the high 32 bits) and p2 (the low 32 bits). The key belongs to the
// point nearest to either probe, looking both ways round the circle, and so
// to that point's node. Ties (two points at the same distance) go to the node
// whose ID sorts first. The preference list continues the same way: nodes in
// order of how near their nearest point is to the nearer probe, each node
// once. (The classic ring takes the first point clockwise from one probe;
// this is the same idea, made fairer, see below.)
//
// Precisely, as a brute-force scan would compute it: for a key with hash h,
// p1 = uint32(h>>32) and p2 = uint32(h); a point at position q is at
// distance min(q-p, p-q) from a probe p, in wrapping uint32 arithmetic (the
// shorter way round); a node's distance is that of its point nearest to
// either probe; the preference list is the nodes sorted by (distance, ID),
// and the owner is its first node.
//
// A lookup is a hash plus, for each probe, a short search with no branch
// the processor has to guess. Only the nearest point on each side of a probe
// can own it, so the search finds the probe's predecessor (the last point at
// or before it) and compares it with the point after. The circle keeps one
// entry per distinct position (position and node index in 8 bytes): of
// several points at one position only the lowest node index can win a
// lookup, so the others are set aside for the preference-list walk. A prefix
// index, a table indexed by the top bits of the position, gives the start of
// the probe's bucket, which holds 1 to 2 entries on average; the lookup
// counts, with arithmetic rather than a loop, how many of the 8 entries from
// there are at or before the probe, and that count is the predecessor. (On
// rings of more than about 250 weight-1 nodes the index stops growing at 1
// MiB and the 8 entries are centred on a guess interpolated inside the
// bucket.) When the answer lies outside the 8 entries, a few times in ten
// thousand probes, a binary search of the bucket finds it. The two probes'
// searches run side by side, so their memory reads overlap. So Owner is a
// hash and, per probe, one index read and one or two cache lines of entries;
// it does not allocate.
//
// # Why two probes, looking both ways
//
// A node's share of the keys is the sum of what its points own. With the
// classic rule (first point clockwise) a point owns the gap before it, and
// the gaps between random points are exponentially distributed: a node with
// V points has a share whose coefficient of variation (CoV) is 1/sqrt(V).
// Owning the nearest keys on both sides averages two gaps (CoV
// 0.71/sqrt(V)); taking the nearer of two probes saturates big gaps, since a
// key whose probe lands deep in a big gap usually has its other probe nearer
// some other point. With both, a point's expected share is proportional to
// U1+U2 for two uniform variables, and a node's share has a CoV of about
// 0.41/sqrt(V): six times fewer points for the same balance as the classic
// ring. With the default 2048 points the spread is about 0.9%, like a
// classic ring with 12,000 points, at a sixth of the memory. The cost is a
// second search per lookup, which runs in parallel with the first in the
// processor.
//
// # What moves when members change
//
// The owner of a key is the best-scoring point, and a point's score (its
// distance to the key's probes, then its node's ID) depends only on the key
// and the point: never on the other members. So:
//
//   - When a node joins, the keys that move are exactly those whose best
//     point is one of the newcomer's: they all move to the newcomer, and the
//     fraction that moves is the newcomer's share, about 1/(N+1) (within a
//     few percent, the CoV above plus the sampling noise of the keys).
//   - When a node leaves, exactly its keys move; every other key keeps its
//     owner.
//   - Preference lists gain or lose that one node; the others keep their
//     order. A weight change moves keys only to or from the reweighted node,
//     because weights are not normalised.
//   - The ring is a function of the member set and the Config only: every
//     process computes the same owners, whatever order members joined in.
//
// # Rack-aware lists and bounded loads
//
// OwnersRackAware walks the same preference order but first takes nodes on
// racks not yet used: the owner, then the next nodes on other racks while
// racks remain, then the remaining nodes in order. With at least n racks the
// n nodes are on n distinct racks.
//
// OwnerBounded implements "Consistent Hashing with Bounded Loads" (Mirrokni,
// Thorup and Zadimoghaddam): each node may hold at most ceil(c * (total+1) *
// weight / total weight) units of load, c >= 1 (say 1.25). A key goes to the
// first node of its preference list that is below its capacity, so no node
// runs more than c times its fair share while most keys still land on their
// owner. The caller owns the loads and passes them in; the ring stays
// immutable.
//
// # Blocks and splits
//
// A block is the unit of ownership: block i of an object covers bytes
// [i*B, (i+1)*B) for the cluster block size B, and its ring key is
// BlockKey(uri, i) = uri + "#" + i. A split (uri, offset, length), what a
// task reads, is placed by the block holding most of its bytes, ties to the
// lower block index: PlacementBlock and PlacementKey are the only place this
// rule lives, and cache nodes, the scheduler and clients all call them.
//
// # Threading
//
// A Ring is immutable: build a new one with New on every membership change
// and publish it with an atomic.Pointer[Ring]; any number of goroutines may
// call any method at once. The package starts no goroutines, reads no clock
// and keeps no global state.
//
// # Costs
//
// An entry takes 8 bytes (position and node index; the rare points that
// share a position with another take 8 bytes more each), and the prefix
// index 2 to 4 bytes per entry up to 1 MiB, then less (1/2 to 1 byte past
// 2^21 entries). With the
// default 2048 points per weight-1 node, a ring of 10 nodes takes 0.23 MB,
// of 100 nodes 2.2 MB, of 1,000 nodes 17.4 MB; building one takes about 1
// ms, 15 ms and 150 ms on the 2-core development machine (BenchmarkNew).
// On that machine Owner costs the key's hash (35 to 40 ns for a 70-byte key
// there) plus roughly 60 to 75 ns at 10 nodes and 85 to 105 ns at 100
// nodes; at 1,000 nodes the ring (17 MB) no longer fits the CPU caches and
// a lookup waits on memory, 200 to 340 ns all told depending on what else
// the machine runs (BenchmarkOwner; read it against the baseline and the
// hash-only figure of the same run). Lookups do not allocate; Owners and
// the rack-aware and bounded variants do not either while they pass at most
// 16 nodes.
package ring
