// Package scheduler is the Locus placement service (cmd/scheduler): the
// pure placement core (pkg/placement) driven by the gossip membership,
// served as a JSON API and the gRPC SchedulerService, with Prometheus
// metrics, a status page, and optional high availability through etcd.
//
// # What it does
//
// A query engine asks where a task over a split (URI, offset, length)
// should run. The scheduler computes the split's placement key
// (ring.PlacementKey with the cluster block size) and its preference list
// (the first R owners on the current ring, ring.Owners, R the cluster
// replication), and
// hands the task to the placer, which answers with a cache node:
// DATA_LOCAL on a node of the list, RACK_LOCAL on another node of the
// owner's rack, OTHER_LOCAL elsewhere (see pkg/placement for the ladder
// and the locality waits). The task holds one of the node's slots until
// the client reports it complete, with the bytes it read by source
// (local cache hit, peer cache hit, origin miss); those bytes are counted
// against the task's locality, so the hit ratio per locality level sits
// next to the DATA_LOCAL ratio. If the node dies first, the task is
// reported lost.
//
// # Membership
//
// The scheduler joins the cache nodes' gossip as an observer (it owns no
// ring range; its metadata announces its HTTP and gRPC addresses). Every
// new View is applied to the placer at once: alive cache members are
// nodes with their rack and slots, draining members keep their running
// tasks but take no new one, and members that left or were declared dead
// are removed, their running tasks reported lost (logged, counted in the
// job's "lost", listed by GET /v1/lost). A member that leaves while
// draining keeps its running tasks until they complete (its drain waited
// for its reads, not for the tasks' executors; GET /v1/ring lists it as
// "dead" meanwhile); if it joins again first, they are lost. How fast a crash is noticed is the
// gossip's failure detector: membership.LANTuning declares a killed node
// dead in about 3-7 s, LoopbackTuning (--gossip-tuning=loopback) in about
// 1-1.5 s; the integration test measures 1.0-1.3 s from kill -9 to lost
// tasks and to new tasks avoiding the node.
//
// A View with a new ring (a node joined or left: a new epoch) also moves
// blocks to new owners. Tasks queued at that moment (waiting under delay
// scheduling) get their preference lists again from the new ring, before
// any slot is handed out (placement.Placer.Rekey): they wait for, and are
// DATA_LOCAL on, the node that owns their block now, and their locality
// wait is not restarted. A task placed later answers with the owner,
// locality and ring_epoch of the ring it was placed with; one placed
// already keeps its own.
//
// # Settings
//
// Block size, replication and locality wait come from Config (the flags)
// unless etcd holds a cluster config, which overrides them and is watched
// (see below). The block size may be left 0: the scheduler then uses the
// cache nodes' (View.BlockSize; 128 MiB while none is known). When set, it
// must equal theirs, or placement answers 503 naming the flag to fix,
// rather than computing keys the nodes do not own.
//
// The replication (the preference-list length) belongs to the cache nodes:
// each announces its --replication (default 2) in the gossip and the
// membership refuses a node whose value differs from the cluster's. A node
// serves a block from its own cache only when it is in the block's list of
// that length, so a scheduler that used another length would count as
// DATA_LOCAL tasks that in fact read through a peer. Placement therefore
// always uses the NODES' value (View.Replication; DefaultReplication, 2,
// while no cache node is known). --replication defaults to 0, "take the
// nodes'"; a value set there or in etcd's cluster config that differs
// from the nodes' is logged as a warning (once, and again when either
// value changes) and ignored for placement. GET /v1/ring reports the
// replication in use.
//
// # The calls
//
// The JSON API (DESIGN.md) and the gRPC service carry the same calls:
//
//	POST /v1/place            {"job","task","split":{"uri","offset","length"},"wait_ms"} → Placement
//	POST /v1/place/batch      {"job","tasks":[{"task","split"}...],"wait_ms"} → {"placements":[...]}
//	POST /v1/complete         {"job","task","bytes","local_hit_bytes","peer_hit_bytes","miss_bytes","duration_ms"}
//	POST /v1/complete/batch   {"job","tasks":[{"task","bytes",...}...]} → {"results":[...]}  (an addition)
//	GET  /v1/jobs/{job}       JobCounters (a job name may hold "/"): DATA_LOCAL_TASKS, RACK_LOCAL_TASKS, OTHER_LOCAL_TASKS, hit_ratio, hit_ratio_by_locality, ...
//	GET  /v1/counters         the same over every job
//	GET  /v1/jobs             {"jobs":[...]}
//	GET  /v1/ring             RingStatus: members with rack, state, slots in use, capacity, share; epoch
//	GET  /v1/lost?job=        the most recently lost tasks
//	GET  /metrics, /healthz, /readyz, and / (an HTML status page fed by the calls above)
//
// Complete: bytes 0 means local_hit_bytes + peer_hit_bytes + miss_bytes;
// bytes above that sum count as miss bytes (read from the origin), so the
// hit ratios of /v1/jobs and of locus_task_bytes_total agree; below it the
// answer is 400.
//
// Place: wait_ms 0 means --locality-wait, negative means "do not wait".
// A task whose allowed slots are busy waits in the queue: for its owner
// (then its rack, then anywhere, as its waits run out), and then for any
// slot to free up, until --max-queue-wait (30s) or the request ends; then
// it is cancelled and the answer is 503. With no alive cache node with
// slots at all the answer is 503 at once (and queued requests get it when
// the last such node goes). A (job, task) already queued or running is 409.
//
// PlaceBatch places a stage at once: the placer's maximum matching of
// tasks to their preferred nodes' free slots, then rack, then any slot as
// their waits allow. The batch returns when every task is placed, or as
// soon as no alive node has a free slot, or after --max-queue-wait. The
// rule avoids a deadlock: the client holds the slots of the tasks it
// already got and cannot complete them before the batch returns, so the
// batch waits only while some node has a free slot (which a remaining task
// takes at the latest when its waits are over: that wait always ends).
// Tasks still unplaced come back in order with "error": "deferred: ..."
// and no node; they are cancelled keeping their first-seen time, so
// resubmitting them continues their locality waits. The gRPC PlaceBatch
// answers the same way (Placement.error).
//
// Complete frees the slot and records the outcome. An unknown job, or a
// task that is not running (never placed, completed already, lost), is 400
// with code "not_found" (gRPC NOT_FOUND); a task still waiting for its
// placement is 409. bytes 0 means local+peer+miss; bytes below that sum is
// 400. In a /v1/complete/batch answer each such task has the error, code
// and status it alone would have got, over gRPC's CompleteBatch too.
//
// Bad input is 400 with {"error": ...} naming the problem: malformed JSON,
// an unknown field, a wrong type, trailing data, an empty job, task or URI,
// a negative offset, a non-positive length, a batch over --max-batch-tasks
// or listing a task twice, negative byte counts. Bodies over
// --max-body-bytes (single calls, 64 KiB) or --max-batch-body-bytes
// (16 MiB) are 413. An unknown job on GET /v1/jobs/{job} is bad input too:
// 400 with code "not_found". Every error answer is
//
//	{"error": "<what went wrong, for people>", "code": "<kind, for programs>"}
//
// (plus "leader" on a follower's 503). The code is one of schedapi's
// Code* constants: bad_request and not_found (400), unauthorized (401),
// conflict (409), too_large (413), no_node, not_leader and unavailable
// (503), internal (500); clients read it, not the status, to tell an
// unknown job from other bad input. CodeOf maps errors to codes, StatusOf
// to HTTP statuses. A path the API does not have is the one 404 (code
// "no_endpoint"): routing, not bad input; a path it has, asked with
// another method, is a 405 (code "method_not_allowed") with an Allow
// header.
//
// # Authentication
//
// With --auth-token-file, every mutating call (every POST, and gRPC Place,
// PlaceBatch, Complete, CompleteBatch) must carry "Authorization: Bearer <token>"
// (compared in constant time), else 401 / UNAUTHENTICATED. Reads (GET,
// JobCounters, Ring, /metrics, the status page) stay open: they reveal
// counters and addresses, not data. TLS (--tls-cert, --tls-key; --tls-ca
// to require client certificates) covers both listeners.
//
// # High availability with etcd
//
// Without --etcd-endpoints the scheduler is standalone: its state is in
// memory and a restart starts the counters from zero. With etcd, several
// schedulers share these keys under --etcd-prefix (default /locus/):
//
//	<prefix>config                 cluster config JSON: {"block_size":..,"replication":..,"locality_wait":"3s"}
//	<prefix>election/<lease>       the election (concurrency.Election): value {"id","http","grpc"}
//	<prefix>counters/global        placement.Counters JSON of every job together
//	<prefix>counters/jobs/<job>    placement.Counters JSON of one job (job path-escaped)
//
// The config, when present, overrides the flags of every scheduler and is
// watched (a change applies to the next placements; an invalid one is
// logged and ignored; "0s" is no wait). When absent, the first leader
// writes it from its own flags, so later schedulers follow the first.
//
// The schedulers campaign with a session whose lease TTL is
// --etcd-session-ttl (5s). The leader imports the persisted counters into
// a fresh placer (tasks that were running become lost: the new leader
// cannot know them, and their Complete gets 400 "not_found") and places.
// Followers answer mutating calls with 503 {"error": "not the leader...",
// "code": "not_leader", "leader": "<http address>"} and the X-Locus-Leader
// header (gRPC: FAILED_PRECONDITION with an x-locus-leader trailer), or
// proxy them to the leader with --forward-to-leader. Reads work on
// followers: the ring from their own gossip, counters and the job list
// from etcd. A follower has no placer, so its own GET /v1/ring shows no
// slot in use and its /v1/lost no task: a forwarding follower proxies
// those two to the leader as well. /readyz is 200 on the leader and on a forwarding follower
// that knows the leader, 503 on other followers (and on a leader whose
// block size differs from the cache nodes', and on a follower forwarding
// to it), so a load balancer sends
// calls to a scheduler that can serve them. While etcd cannot be read no
// leader is known (the reason says so): a follower does not forward to, or
// name, a leader that may be gone, and a deposed leader does not name
// itself. A session that ends while etcd is unreachable cannot revoke its
// lease, and an etcd that restarts (or elects a new raft leader) gives
// every lease its full TTL again: the scheduler revokes that lease on its
// next campaign, once etcd answers, rather than leave its old key holding
// the election for another TTL, and until then is not ready (it names no
// leader, itself included). The etcd client redials at least every 2 s,
// so a scheduler reaches etcd within seconds of its return however long it
// was away. The leader is read again on every change of the election keys
// and at least every --etcd-session-ttl, so an unreachable etcd shows in
// /readyz within about the TTL plus one etcd call's timeout (about 10 s
// with the defaults).
//
// Counters are persisted before a call that changed them is answered, so
// an answered call is never lost by a failover: a persister goroutine
// writes the global counters and those of the jobs that changed since its
// last write in one transaction (group commit: every call that arrives
// while a write is in flight goes into the next one), conditional on the
// leader's election key still existing (fencing: a deposed leader's writes
// fail, and it steps down). A call whose write fails gets 503. A leader
// killed with SIGKILL is replaced when its lease expires: about the TTL
// (5.0-5.3 s measured with the default 5 s, within the 10 s goal). On
// SIGTERM the leader flushes, revokes its lease, and a follower takes over
// at once.
//
// # Threading
//
// The placer is not safe for concurrent use: one mutex (Scheduler.mu)
// guards it, the table of waiting requests, and the persistence marks.
// Calls hold it only to submit, complete or cancel, never while waiting.
// Three goroutines drive it besides the calls: the membership loop
// (applies each new View), the timer (one time.Timer re-armed to the
// placer's NextDeadline, which calls Advance when a task's locality wait
// ends), and, on the leader, the persister. After every change the caller
// "settles": Advance, then each assignment goes to its waiting request
// through that request's buffered channel (a task whose request gave up
// was cancelled first, so every assignment has a receiver). A request that
// stops waiting (timeout, client gone) cancels its task under the mutex;
// if its assignment arrived meanwhile it takes it, or cancels the
// placement (counted lost) when the client is gone.
//
// # JSON
//
// The API's messages, their validation and their codec are package
// schedapi, shared with the clients (pkg/client imports it, not this
// package, so executors do not link etcd, zap or memberlist). The hot
// calls decode their bodies with schedapi's fast path, which accepts the
// plain form every encoder writes and falls back to encoding/json, with
// DisallowUnknownFields, for anything else; it never accepts what
// encoding/json would decode differently (a differential fuzz test checks
// it). Answers are encoded byte-for-byte as encoding/json would. Go
// clients use schedapi.AppendPlaceBatchRequest, DecodePlaceBatchResponse
// and friends. The sentinels of error answers (ErrBadRequest, ErrNotFound,
// ...) are schedapi's, exported here under the same names.
//
// Measured on the shared 2-core test machine (go test -bench Throughput,
// client and server in one process): 70-105k placements/s through POST
// /v1/place/batch + /v1/complete/batch with 1000-task batches and this
// codec in the client, 52-55k/s with an encoding/json client, 150-165k/s
// of server capacity (client cost excluded); see bench_test.go.
//
// # Metrics
//
// A private Prometheus registry (GET /metrics): locus_tasks_placed_total,
// locus_tasks_completed_total, locus_tasks_lost_total, locus_tasks_running
// {locality}; locus_task_bytes_total{locality, source=local|peer|origin};
// locus_tasks_queued; locus_placement_duration_seconds (per placed task,
// from first submission to placement); locus_ring_members{state=alive|
// draining|observer}; locus_slots{state=used|free|draining};
// locus_scheduler_leader; locus_scheduler_waiting_requests;
// locus_scheduler_request_duration_seconds{call} and
// locus_scheduler_requests_total{call,code}; with etcd,
// locus_scheduler_persist_duration_seconds and
// locus_scheduler_persist_errors_total. The task series are read from the
// placer at scrape time, so they equal GET /v1/counters; a follower has
// none (its leader has them).
package scheduler
