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
// would buy under recency alone), not as the node's hit ratio: an operator
// or autoscaler should compare HitRatio at the current size with the
// measured hit ratio and scale the other points by the same factor, or
// treat the LRU curve as a conservative estimate for scan-heavy workloads.
//
// # Threading
//
// An Estimator is not safe for concurrent use. The page cache either calls
// Access under a lock it already holds or keeps one Estimator per shard;
// queries (HitRatio, Curve) take the same lock.
package mrc
