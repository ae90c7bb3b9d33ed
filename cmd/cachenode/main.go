// Command cachenode is the Locus cache node daemon: it caches byte ranges of
// data-lake objects (S3 or local files) in RAM and on local disk, owns the
// ring ranges that gossip assigns it, serves reads over gRPC and an
// S3-compatible HTTP gateway, and exports Prometheus metrics.
//
// Every flag can also be set through the environment: --cache-dir is
// LOCUS_CACHE_DIR. Run cachenode --help for the list; package
// pkg/node/daemon holds the implementation.
package main

import (
	"os"

	"github.com/locuscache/locus/pkg/node/daemon"
)

func main() {
	os.Exit(daemon.Main(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}
