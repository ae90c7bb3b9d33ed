// Package localcluster runs a whole Locus cluster inside one process, on
// loopback, for `locusctl up` and for tests: a file:// origin, cache nodes
// (package node: real memberlist gossip, gRPC, HTTP with /metrics and the
// S3 gateway, RAM caches) on two racks, and a standalone scheduler that
// observes their gossip. It also writes a small Parquet dataset with
// arrow-go and runs the executor loop over it.
//
// # Layout
//
//	Config.Dir/data/                 the file origin's root (the nodes' --origin-file-root)
//	Config.Dir/data/lake/            served by every node's S3 gateway as bucket "lake"
//	Config.Dir/data/lake/events/     the dataset `locusctl up` writes: part-00000.parquet, ...
//
// Every listener binds 127.0.0.1 on a port picked free at start (HTTP
// ports can be fixed with Config.HTTPPortBase), so several clusters, and
// the tests, run side by side on any Linux box. Nodes and scheduler share
// one block size (Config.BlockSize, 512 KiB by default: small enough that
// a few-MB dataset spreads over three nodes). The nodes run the product's
// replication, 2, by default (Config.Replication; the scheduler takes it
// from the nodes): a block's preference list is its owner and the next
// node of the ring.
//
// # The workload
//
// A pass (Workload.RunPass) is one job: every split of the Plan (one per
// row group, parquetx.Plan) is a task. Each task asks for its placement
// with one Place and a short locality wait (Workload.Wait, 500 ms), the
// scheduler queueing what the slots cannot take, as an engine's executors
// do; with Workload.Batch (locusctl up --batch) a pass is placed with
// PlaceBatch instead, and the tasks a batch deferred because every slot
// was taken are resubmitted as running tasks complete. Each placed task
// reads its split through the node it was placed on (client.ReadSplit),
// decodes the row group with arrow-go from exactly those bytes (the
// footer comes parsed from the plan), and completes with the bytes by
// source from its read summary. The first pass over a cold
// cluster misses (a page shared by two adjacent row groups may hit);
// later passes hit: locally when the task runs on a node of its split's
// list that read the split before, from a peer otherwise (a list node
// reading a split for the first time fills its cache from the owner's; a
// node outside the list reads through the list). Each pass's result lists
// its tasks (PassResult.Runs): node, owner, locality, bytes by source.
//
// # Threading
//
// Start, Stop and RunPass may be called from any goroutine; RunPass runs
// one goroutine per placed task and returns when all have finished. Run
// one pass at a time per Workload.
package localcluster
