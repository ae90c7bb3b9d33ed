// Package origintest holds test harnesses for package origin and its users:
//
//   - MemStore, an in-process origin.Store with versions, call counters and
//     fault injection, for unit tests of the page cache and the client that
//     must not touch sockets;
//   - VersityGW, which runs a real S3 server (versitygw with its posix
//     backend) on a free loopback port for the duration of one test, for
//     integration tests of origin.S3Store and anything above it.
//
// VersityGW finds the versitygw binary in PATH or in $(go env GOPATH)/bin.
// Install it with
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//
// When the binary is absent the test is skipped with that hint, unless the
// environment sets LOCUS_REQUIRE_VERSITYGW=1 or LOCUS_REQUIRE_TOOLS=1 (CI
// does), in which case it
// fails: CI must never pass by skipping its S3 tests.
package origintest
