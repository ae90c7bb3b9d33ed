package node

// Regression test for what a review of f6607b9 (gateway GETs counted
// through gateway.RequestObserver) found; it failed before its fix.

import (
	"testing"
)

// TestVersionIdGetCounts: f6607b9's contract is that "every S3
// gateway GET counts once in the read metrics, whatever its answer"
// (commit message; node/doc.go: "A client read is one gRPC ReadRange or
// one S3 gateway GET of an object ... counted once whatever its answer"),
// and gatewayCode maps 501 to Unimplemented for it. But a GetObject with a
// versionId (GET /bkt/key?versionId=...), which the gateway answers 501
// NotImplemented, was refused in ServeHTTP before object() called
// ObserveRequest, so it was counted nowhere: a client that reads by version
// (aws s3api get-object --version-id, SDK readers pinned to a version)
// gets nothing but 501s while locus_reads_total and
// locus_read_duration_seconds stay flat, as if no one read. The
// Unimplemented branch of gatewayCode is unreachable (the only other 501,
// origin.ErrUnsupportedScheme, goes through Code(err)). Expected:
// locus_reads_total{kind="client",code="Unimplemented"} +1 and one
// duration sample. (?tagging, ?acl etc. are other APIs, not reads of the
// object; they may stay uncounted.)
//
// Fixed: the versionId check is in object(), after observe.
func TestVersionIdGetCounts(t *testing.T) {
	c := newTCluster(t, tclusterOpts{n: 1, repl: 1, mutate: rvmGateway})
	n := c.nodes[0]
	c.mem.Put("s3://bkt/v.bin", randBytes(5, 1000))
	before := rvmScrape(t, n)
	if code := gwDo(t, n, "GET", "/bkt/v.bin?versionId=3HL4kqtJlcpXroDTDmjVBH40Nrjfkd"); code != 501 {
		t.Fatalf("GET with a versionId: %d, want 501 (test setup)", code)
	}
	d := rvmDelta(before, rvmScrape(t, n))
	reads := rvmPick(d, "locus_reads_total")
	if len(reads) != 1 || reads[`locus_reads_total{code=Unimplemented,kind=client}`] != 1 {
		t.Errorf("GET ?versionId answered 501 counted as %v, want locus_reads_total{code=Unimplemented,kind=client} +1", reads)
	}
	if got := d[`locus_read_duration_seconds_count{kind=client}`]; got != 1 {
		t.Errorf("locus_read_duration_seconds{kind=client}: %g samples, want 1", got)
	}
}
