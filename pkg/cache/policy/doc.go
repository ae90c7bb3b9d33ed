// Package policy holds the page cache's admission and eviction policies: small,
// pure, deterministic state machines over 64-bit keys behind the Policy
// interface, with LRU as a baseline.
package policy
