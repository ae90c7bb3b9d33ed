// Package mrc estimates miss-ratio curves: the hit ratio a node's page cache
// would have at other sizes (0.25x, 0.5x, 2x, 4x its size), for sizing.
//
// # SHARDS, fixed size
//
// Estimator implements SHARDS (Waldspurger, Park, Garthwaite and Ahmad,
// "Efficient MRC Construction with SHARDS", FAST 2015) in its fixed-size
// form: a key is sampled iff hash(key ^ seed) < T. The estimator tracks the
// last access time of each sampled key; on a reuse, the number of sampled keys
// touched since (an order statistic over a Fenwick tree) divided by the
// sampling rate R = T/2^64 estimates the key's LRU reuse (stack) distance,
// counted in a histogram of log-spaced bins (32 per power of two). The
// sample set is bounded by Config.SampleBudget: when a new key would exceed
// it, the key with the largest hash leaves, T drops to that hash, and the
// histogram is rescaled by R_new/R_old, so memory stays fixed while the rate
// adapts to the number of distinct keys. HitRatio(s) counts the accesses
// with distance below s and applies the SHARDS_adj correction (the
// difference between the accesses expected in the sample, N x R, and those
// counted is credited to distance zero).
//
// Cost: Access on an unsampled key is a multiply-xorshift hash and one
// compare; a sampled key (a share R of the accesses; with 8192 keys over
// 2^22 distinct pages, 0.2%) costs a map lookup and O(log budget) tree
// updates, and at most every budget sampled accesses the timestamps are
// renumbered in O(budget). Memory: about 70 bytes per sampled key plus a
// 10 KiB histogram; nothing is allocated after New.
//
// Accuracy (TestAccuracyOnTraces, against exact LRU ratios from Exact, at 1,
// 5, 10, 25 and 50% of each shared trace's distinct keys and at 0.25x, 0.5x,
// 2x and 4x of 10%): mean absolute error 0.0007 in hit ratio with the default
// budget of 8192 keys (most of these traces fit the sample whole), 0.015
// with a budget of 1024 (rates 5% to 85%), worst trace 0.05 (lirs-2_pools).
//
// # What the curve means for the real policy
//
// SHARDS estimates the LRU stack curve: the hit ratio an LRU cache of each
// size would have. The page cache runs the default policy (package policy),
// not LRU. On the shared traces (pkg/cache/sim/testdata/results.md) the
// default policy's hit ratio is at or above LRU's at the same size at 57 of
// 70 points, 10.7 points above on average, and far above it where scans or
// loops defeat LRU (lirs-loop at 25%: 24% against 0%); it is below LRU by
// up to 0.94 points where LRU is near-optimal (zigzag, sprite, web07 and
// web12 at 50%, 2_pools at 50%, cs at 1 and 5%). So the LRU curve is, for
// this policy, close to a lower bound.
// Read the curve as the shape of the working set (how much a size change
// would buy under recency alone), not as the node's hit ratio. Against the
// default policy's true hit ratios (replayed at 0.25x to 4x of 10% of each
// shared trace) the LRU curve is off by 0.12 on average, by up to 0.22
// (lirs-cpp); Mini, below, answers for the policy itself.
//
// # Miniature simulation of the cache's own policy
//
// Mini (Waldspurger, Saemundsson, Ahmad and Park, "Cache Modeling and
// Optimization using Miniature Simulations", USENIX ATC 2017) replays the
// keys whose spatial hash falls under a rate R through one instance of the
// policy per size, each R times that size. R puts the largest miniature at
// MiniConfig.SampleBudget keys (default 4096), but is at most MaxRate
// (default 1/32) unless that would leave the largest under 256 keys: a
// small cache would otherwise replay every read through five policies. It
// models what SHARDS cannot: scan resistance, admission, adaptation.
//
// Its error has one large part that does not depend on the size: the
// default policy behaves differently at a miniature's few hundred or
// thousand keys than at a large cache's hundreds of thousands (it samples
// its own candidates above 2,048 keys and confirms switches above 20,480),
// so every miniature is high or low by about the same. Mini always
// simulates the cache's own size too, and Calibrated shifts the curve by
// the difference between the hit ratio the cache measures and that
// miniature's: the curve says how much a change of size buys, the cache
// what its size gets. Anchoring assumes that difference holds at the other
// sizes; one that comes from how the cache orders accesses (a read of many
// pages touches them all before it stores any) need not, on tiny caches,
// nor would a cache that restarts warm while its miniatures start cold:
// Warm fills them with the pages the cache re-indexed.
//
// Measured against the default policy replayed at 0.25x to 4x of a base
// size (mean absolute error in hit ratio):
//
//   - the shared traces, base 10% of their keys (TestMiniAccuracyOnTraces):
//     0.030 raw, 0.013 anchored (worst trace 0.033) at the defaults (rates
//     3 to 63%); 0.0004 with MaxRate 1 (rates 50 to 100%); the LRU curve
//     0.120;
//   - package sim's six large synthetic traces (database-like, Zipf 0.8,
//     an LRU stack stream, one-hit wonders, shifting sets, four workloads
//     end to end; 1.5 to 6 million accesses), bases 2% and 10% of their
//     keys, rates 0.7 to 3.1% (TestMiniAccuracyLarge -args -large): 0.031
//     raw, 0.010 anchored (worst 0.027); the LRU curve 0.041 (0.021
//     anchored the same way).
//
// Cost: an unsampled access is a hash and a compare, like SHARDS; a sampled
// one is an access to each of five policies, several microseconds. Per
// access on average (BenchmarkMiniAccess): about 9 ns at a million pages
// (rate 0.1%), 220 ns at 16,384 pages (rate 1/32), 350 ns at 1,024 pages
// (rate 1/16); below that the 256-key floor raises the rate: measured by a
// reviewer, 670 ns at 512 pages, 1.3 us at 256, 2.7 us at 128, 5.4 us at
// 64 (rate 1). Memory: the policy's per-key memory for about 2x the
// largest miniature's keys (2.0 MiB for the default policy at 4,096).
//
// # Threading
//
// An Estimator or a Mini is not safe for concurrent use, except for
// Estimator.Skip and Mini.Sampled, which read only what may be read
// concurrently. The page cache calls Skip (or Sampled) first, without a
// lock, and Access under a lock of the estimator's only for the keys they
// leave to it; its queries (HitRatio, Curve, Calibrated) take the same
// lock.
package mrc
