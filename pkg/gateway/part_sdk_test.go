package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestSDKPartNumberOneLikeOrigin: GetObject and HeadObject with
// partNumber=1 of an object stored in one part answer 206 with
// Content-Range bytes 0-(size-1)/size, as S3 answers (partNumber
// "effectively performs a ranged GET for the part", and part 1 of such an
// object is all of it) and versitygw does. Was: 200 without Content-Range.
func TestSDKPartNumberOneLikeOrigin(t *testing.T) {
	data := randBytes(5000, 21)
	e := startSDKEnv(t, putBytes("one-part.bin", data))
	b, k := aws.String(e.bucket), aws.String("one-part.bin")
	for what, op := range map[string]func(c *s3.Client) ([]byte, error){
		"GetObject":  getOp(s3.GetObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(1)}),
		"HeadObject": headOp(s3.HeadObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(1)}),
	} {
		g, d := e.both(op)
		if ds := diff(g, d); len(ds) > 0 {
			t.Errorf("%s partNumber=1 differs from versitygw:\n  %s", what, strings.Join(ds, "\n  "))
		}
		if want := fmt.Sprintf("bytes 0-%d/%d", len(data)-1, len(data)); g.status() != 206 || g.raw.Header.Get("Content-Range") != want {
			t.Errorf("%s partNumber=1: status %d Content-Range %q, want 206 %q", what, g.status(), g.raw.Header.Get("Content-Range"), want)
		}
	}
}
