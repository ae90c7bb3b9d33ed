// Package placement decides where tasks run: the pure placement core of the
// Locus scheduler. It keeps the cluster view (nodes, racks, slots), the
// queue of waiting tasks and the locality counters, and it answers "which
// node?" for each task. It does no I/O, owns no goroutine, reads no clock
// and uses no randomness: time is an argument of every call that needs it,
// and the same calls in the same order give the same decisions. The
// scheduler service wraps it with HTTP/gRPC, membership and persistence.
//
// # Locality
//
// A task carries the preference list of its split's placement key (node
// ids, owner first, as many as the ring's replication). A placement is
//
//   - DATA_LOCAL on a node of the preference list;
//   - RACK_LOCAL on another node in the owner's rack;
//   - OTHER_LOCAL anywhere else.
//
// The names are Tez's DAG counters DATA_LOCAL_TASKS, RACK_LOCAL_TASKS and
// OTHER_LOCAL_TASKS. Only Alive nodes are ever chosen; Draining and Dead
// nodes, and node ids the placer does not know, never are.
//
// # The ladder and the waits (delay scheduling)
//
// A task may wait for a better slot before stepping down one level. Each
// task has its own Wait (the service's --locality-wait, 3s by default) and
// its own first-seen time s (its first Submit or PlaceBatch). With w = Wait:
//
//	from s:       DATA_LOCAL only
//	from s + w:   DATA_LOCAL, else RACK_LOCAL
//	from s + 2w:  DATA_LOCAL, else RACK_LOCAL, else OTHER_LOCAL
//
// A level that cannot be satisfied costs no wait: when the owner's rack is
// unknown (the owner was never a member, or has Rack ""), there is no rack
// level and the task may go anywhere from s + w, and so when the rack has
// no node besides the task's preferred ones that can take tasks (the owner
// alone in its rack, the others draining, dead, with 0 slots or gone):
// checked when the task reaches the rack level, and again when the last
// such node stops taking tasks; when none of the preferred
// nodes can take tasks at all (unknown, draining, dead, or 0 slots) the
// data-local wait is skipped, at submit time or as soon as the last of them
// stops taking tasks. Wait <= 0 means anywhere at once. At every level the
// best free slot wins: a task allowed anywhere still goes data-local if it
// can. The owner's rack is looked up when the task is submitted (a node
// that left the membership keeps its last known rack).
//
// # Ring changes
//
// A queued task's preference list comes from the ring of its submission.
// When a node joins or leaves, the ring moves some blocks to other owners;
// the caller, which knows each queued task's placement key, computes the
// new lists and hands them to Rekey (after SetNodes, before Advance).
// Re-keyed tasks wait for, and count as DATA_LOCAL on, the new owner; their
// waits still count from their first-seen time (one whose data-local wait
// ended because its old preferred nodes died waits again, until its
// original deadline, for a new owner that is alive), and they keep their
// first-submitted-first order in the waiting lists. Running tasks keep the
// locality they were placed with. A node whose process restarted under the
// same id before the failure detector saw it die (the ring unchanged) goes
// through RestartNode: its running tasks are lost, its waiters keep
// waiting for it.
//
// Waits count per task from its own first-seen time, not from the last
// local launch of its stage as Spark's per-stage timer does. So when many
// tasks prefer one hot node (SPARK-18886), their waits expire on time
// however often that node launches one of them, and they spread over the
// cluster: no slot stays idle while a task waits past its wait. The
// testdata/skew.txt script shows it.
//
// # Who gets a freed slot
//
// A slot freed by Complete (or a node joining, reviving, or gaining slots)
// goes first to the oldest queued task that prefers that node (DATA_LOCAL),
// even when an older task that already stepped down could use it: that is
// what keeps DATA_LOCAL high under oversubscription. Then to the oldest
// task at rack level whose owner is in the node's rack, then to the oldest
// task allowed anywhere. A task whose wait expires takes a free slot of its
// owner's rack, or any free slot at the last level. After Advance(now) no
// queued task has a free slot its level allows (Verify checks this).
//
// # Batches
//
// PlaceBatch places a whole stage at once: a maximum b-matching of tasks to
// their preferred nodes under the free slots (augmenting paths, as Quincy
// frames placement as a flow problem) gives the most DATA_LOCAL placements
// possible; tasks whose ladder already allows it then take rack, then any,
// slots; the rest queue exactly as Submit would queue them. A batch larger
// than the free slots therefore leaves its tail queued. The service either
// waits for those assignments (Advance) or cancels them (Cancel) and answers
// "deferred"; the placer remembers cancelled tasks' first-seen times for
// Config.FirstSeenTTL, so a resubmitted task continues its waits instead of
// restarting them.
//
// # Slots
//
// A placed task holds one slot of its node until Complete. If its node dies
// or leaves the membership first, or the caller cancels it, it is reported
// Lost and its slot is freed. A node never runs more tasks than its slots,
// except when its slots were lowered below the tasks it already runs: it
// then takes no new task until it is below.
//
// # Counters
//
// Per job and globally (Counters), for each locality level:
//
//   - Placed: placement decisions at the level (DATA_LOCAL_TASKS...);
//   - Running: placed, not yet completed or lost (a gauge);
//   - Completed: tasks that reported an Outcome;
//   - Lost: tasks whose node died or left, cancelled after placement, or
//     running when the counters were exported (Import);
//   - Bytes, LocalHitBytes, PeerHitBytes, MissBytes, TaskTime: what the
//     completed tasks reported, so the hit ratio (local+peer)/bytes can be
//     read per locality level next to the DATA_LOCAL ratio: a miss by a
//     DATA_LOCAL task is a caching problem, a low DATA_LOCAL ratio is a
//     placement problem. They saturate at the largest int64 rather than wrap.
//
// Placed = Completed + Running + Lost always holds. Queued is a gauge of
// tasks not yet placed. Export and Import carry the counters across a
// scheduler failover as a JSON-friendly State.
//
// # The caller's loop
//
// The placer is not safe for concurrent use: the caller serialises every
// call, for example under one mutex, and drives time. After any call that
// can free capacity (Complete, Cancel, SetNodes, UpsertNode, RemoveNode,
// Rekey) and when the time given by NextDeadline comes, it calls Advance
// and delivers the assignments Advance returns to the requests waiting for
// them:
//
//	mu.Lock()
//	a, placed, err := p.Submit(task, time.Now()) // placed: answer at once
//	more := p.Advance(time.Now())                // others' assignments
//	next, ok := p.NextDeadline()                 // re-arm the one timer
//	mu.Unlock()
//
// Advance returns a new slice each time; AppendAdvance(buf[:0], now)
// appends to the caller's buffer instead, and is the one to use in a busy
// loop: with it, the steady state (tasks completing, being submitted and
// placed, on a stable membership) allocates nothing.
//
// Submit and PlaceBatch first catch up with their time as Advance does;
// the placements of queued tasks made on the way are held until the next
// Advance returns them. Until then such a task still behaves as queued:
// Complete refuses it, Cancel cancels it as queued, and a node that dies or
// drains puts it back in the queue instead of reporting it lost.
//
// Times must not run backwards; an earlier time than one already seen is
// taken as the latest seen. They must lie between the years 1678 and 2262
// (the placer computes deadlines on time.Time.UnixNano).
//
// # Cost
//
// Submit, Complete and each assignment of Advance cost O(length of the
// preference list) and hash the task id once: tasks are indexed by (job,
// id) in one open-addressing table, node ids are resolved through a small
// cache in front of the node map (the ring hands out the same id strings),
// free slots are indexed globally and per rack, and queued tasks per
// preferred node, per rack, and by deadline (a sorted list, since tasks
// mostly arrive in deadline order, with a heap for those that do not). So
// no decision scans the nodes or the queue, and Advance with nothing due
// costs O(1). PlaceBatch costs O(tasks) plus augmenting phases over a graph
// of nodes (not tasks). See bench_test.go and placementtest for measured
// figures: on a 2-core machine, about 1.5 to 1.8 million decisions per
// second (a Complete, a Submit and an Advance each) on a full cluster.
package placement
