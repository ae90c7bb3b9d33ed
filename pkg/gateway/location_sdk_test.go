package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestSDKBucketLocationOfMissingBucket: GetBucketLocation of a bucket
// the origin does not have is 404 NoSuchBucket, as on S3 and versitygw;
// of one it has, the region. Was: 200 with the region for any name.
func TestSDKBucketLocationOfMissingBucket(t *testing.T) {
	e := startSDKEnv(t)
	ctx := context.Background()
	for _, bucket := range []string{e.bucket, "no-such-bucket"} {
		g, d := e.both(func(c *s3.Client) ([]byte, error) {
			out, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(bucket)})
			if err != nil {
				return nil, err
			}
			return []byte(out.LocationConstraint), nil
		})
		if ds := diff(g, d); len(ds) > 0 {
			t.Errorf("GetBucketLocation %q differs from versitygw:\n  %s", bucket, strings.Join(ds, "\n  "))
		}
	}
}
