package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/readpath"
)

// s3Error is one S3 error response: an HTTP status and the <Error> document.
type s3Error struct {
	Status  int
	Code    string
	Message string

	// Optional elements S3 adds for some codes.
	BucketName       string
	Key              string
	RangeRequested   string
	ActualObjectSize string
	Method           string
	ResourceType     string
	Condition        string
}

// The S3 error codes the gateway sends (names and statuses as S3's
// ErrorResponses documentation lists them).
func errNoSuchKey(bucket, key string) s3Error {
	return s3Error{Status: http.StatusNotFound, Code: "NoSuchKey", Message: "The specified key does not exist.", BucketName: bucket, Key: key}
}

func errNoSuchBucket(bucket string) s3Error {
	return s3Error{Status: http.StatusNotFound, Code: "NoSuchBucket", Message: "The specified bucket does not exist.", BucketName: bucket}
}

func errInvalidRange(header string, size int64) s3Error {
	return s3Error{Status: http.StatusRequestedRangeNotSatisfiable, Code: "InvalidRange",
		Message:        "The requested range is not satisfiable",
		RangeRequested: header, ActualObjectSize: strconv.FormatInt(size, 10)}
}

func errInvalidArgument(msg string) s3Error {
	return s3Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: msg}
}

func errMethodNotAllowed(method string) s3Error {
	return s3Error{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed",
		Message: "The specified method is not allowed against this resource: the Locus gateway is read-only (GET and HEAD only).",
		Method:  method, ResourceType: "OBJECT"}
}

func errNotImplemented(msg string) s3Error {
	return s3Error{Status: http.StatusNotImplemented, Code: "NotImplemented", Message: msg}
}

func errPreconditionFailed(cond string) s3Error {
	return s3Error{Status: http.StatusPreconditionFailed, Code: "PreconditionFailed",
		Message: "At least one of the pre-conditions you specified did not hold", Condition: cond}
}

func errInternal(msg string) s3Error {
	return s3Error{Status: http.StatusInternalServerError, Code: "InternalError",
		Message: "We encountered an internal error. Please try again. (" + msg + ")"}
}

// errorFor maps a Backend or Lister error to the S3 error a client should
// see. bucket and key name the addressed resource.
func errorFor(err error, bucket, key string) s3Error {
	switch {
	case errors.Is(err, origin.ErrBucketNotFound):
		return errNoSuchBucket(bucket)
	case errors.Is(err, origin.ErrNotFound):
		return errNoSuchKey(bucket, key)
	case errors.Is(err, origin.ErrInvalidURI), errors.Is(err, readpath.ErrInvalidRequest):
		return errInvalidArgument("Invalid bucket or key: " + err.Error())
	case errors.Is(err, origin.ErrRejected):
		return errInvalidArgument("The origin object store rejected the request: " + err.Error())
	case errors.Is(err, origin.ErrOutsideRoot), errors.Is(err, origin.ErrAccessDenied):
		return s3Error{Status: http.StatusForbidden, Code: "AccessDenied", Message: "Access Denied: " + err.Error()}
	case errors.Is(err, origin.ErrUnsupportedScheme):
		return errNotImplemented("This cache node has no origin store for the bucket's URI scheme: " + err.Error())
	case errors.Is(err, cache.ErrInvalidRange), errors.Is(err, cache.ErrOutOfRange), errors.Is(err, origin.ErrRange):
		return s3Error{Status: http.StatusRequestedRangeNotSatisfiable, Code: "InvalidRange", Message: "The requested range is not satisfiable"}
	case errors.Is(err, origin.ErrVersionChanged), errors.Is(err, cache.ErrVersionChanged):
		// Only after every retry failed: the object keeps changing.
		return s3Error{Status: http.StatusServiceUnavailable, Code: "SlowDown",
			Message: "The object changed while it was being read; please retry."}
	case errors.Is(err, origin.ErrUnavailable):
		return s3Error{Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable",
			Message: "The origin object store is unavailable; please retry: " + err.Error()}
	case errors.Is(err, origin.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return s3Error{Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable",
			Message: "Reading the origin object store timed out; please retry: " + err.Error()}
	case errors.Is(err, origin.ErrNoVersion):
		// Not a 500: retrying cannot help, and S3 clients retry 500s.
		return errNotImplemented("This cache node cannot serve an object its origin stores without an ETag: cached bytes are keyed by the ETag, so that a changed object is never served from old bytes. Store the object through the S3 API (which gives it an ETag), or read it from the origin directly.")
	}
	return errInternal(err.Error())
}

// errorDoc is the XML body of an S3 error.
type errorDoc struct {
	XMLName          xml.Name `xml:"Error"`
	Code             string
	Message          string
	BucketName       string `xml:",omitempty"`
	Key              string `xml:",omitempty"`
	RangeRequested   string `xml:",omitempty"`
	ActualObjectSize string `xml:",omitempty"`
	Method           string `xml:",omitempty"`
	ResourceType     string `xml:",omitempty"`
	Condition        string `xml:",omitempty"`
	Resource         string
	RequestID        string `xml:"RequestId"`
	HostID           string `xml:"HostId,omitempty"`
}

// write sends e. A HEAD response carries the status only, as S3's does.
func (e s3Error) write(w http.ResponseWriter, r *http.Request, requestID string) {
	h := w.Header()
	for _, k := range []string{"ETag", "Last-Modified", "Accept-Ranges", "Content-Length",
		"Content-Disposition", "Content-Encoding", "Content-Language", "Cache-Control", "Expires", "x-amz-mp-parts-count"} {
		h.Del(k)
	}
	for k := range h {
		if strings.HasPrefix(k, "X-Amz-Meta-") { // the object's user metadata (setMetadata)
			delete(h, k)
		}
	}
	if e.Status != http.StatusRequestedRangeNotSatisfiable {
		h.Del("Content-Range") // a 416 keeps "bytes */size" (RFC 9110)
	}
	if e.Status == http.StatusMethodNotAllowed {
		h.Set("Allow", "GET, HEAD")
	}
	if r.Method == http.MethodHead {
		h.Del("Content-Type") // the object's: a HEAD's error has no document
		w.WriteHeader(e.Status)
		return
	}
	body, err := xml.Marshal(errorDoc{
		Code: e.Code, Message: e.Message, BucketName: e.BucketName, Key: e.Key,
		RangeRequested: e.RangeRequested, ActualObjectSize: e.ActualObjectSize,
		Method: e.Method, ResourceType: e.ResourceType, Condition: e.Condition,
		Resource: r.URL.EscapedPath(), RequestID: requestID,
	})
	if err != nil { // cannot happen for strings; keep the status anyway
		w.WriteHeader(e.Status)
		return
	}
	body = append([]byte(xml.Header), body...)
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}
