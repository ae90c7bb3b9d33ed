package gateway

import (
	"container/heap"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locuscache/locus/pkg/origin"
)

// Bucket-level calls: GetBucketLocation, HeadBucket, ListObjects (v1 and
// v2) and, at "/", ListBuckets. They exist because clients issue them
// around a read (rclone lists or HEADs, s3cmd asks for a location); they
// are not a listing service. Each page scans the prefix's listing from the
// start in the origin, so a page costs O(objects under the prefix) origin
// work and O(max-keys) memory, whatever order the origin lists in.

const s3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// maxListKeys is S3's cap and default for max-keys.
const maxListKeys = 1000

// objectURI returns the origin URI of key under a bucket's URI prefix. S3
// keys are appended literally; file paths are rendered canonically
// (percent-encoded), the spelling the origin and the cache key by.
func objectURI(prefix, key string) string {
	if strings.HasPrefix(prefix, "file://") {
		if u, err := origin.ParseURI(prefix); err == nil {
			u.Path += key
			return u.String()
		}
	}
	return prefix + key
}

// keyOf is the inverse of objectURI: the key of an origin URI listed under
// prefix, or ok=false if it is not under it.
func keyOf(prefix, uri string) (string, bool) {
	if strings.HasPrefix(prefix, "file://") {
		pu, err1 := origin.ParseURI(prefix)
		u, err2 := origin.ParseURI(uri)
		if err1 != nil || err2 != nil || !strings.HasPrefix(u.Path, pu.Path) {
			return "", false
		}
		return u.Path[len(pu.Path):], true
	}
	if !strings.HasPrefix(uri, prefix) {
		return "", false
	}
	return uri[len(prefix):], true
}

func (g *Gateway) writeXML(w http.ResponseWriter, r *http.Request, rid string, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		g.fail(w, r, rid, errInternal("cannot encode the response: "+err.Error()), err)
		return
	}
	body = append([]byte(xml.Header), body...)
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

type listAllMyBucketsResult struct {
	XMLName xml.Name    `xml:"ListAllMyBucketsResult"`
	Xmlns   string      `xml:"xmlns,attr"`
	Owner   owner       `xml:"Owner"`
	Buckets []bucketXML `xml:"Buckets>Bucket"`
}

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

type bucketXML struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
}

// listBuckets answers GET / with the configured bucket names (an empty list
// when every bucket maps to itself: the gateway cannot enumerate S3).
func (g *Gateway) listBuckets(w http.ResponseWriter, r *http.Request, rid string) {
	res := listAllMyBucketsResult{Xmlns: s3Namespace, Owner: owner{ID: "locus", DisplayName: "locus"}}
	names := slices.Sorted(func(yield func(string) bool) {
		for b := range g.cfg.Buckets {
			if !yield(b) {
				return
			}
		}
	})
	for _, b := range names {
		res.Buckets = append(res.Buckets, bucketXML{Name: b, CreationDate: time.Unix(0, 0).UTC().Format(s3Time)})
	}
	g.writeXML(w, r, rid, res)
}

// s3Time is the timestamp format of S3 listings.
const s3Time = "2006-01-02T15:04:05.000Z"

type locationConstraint struct {
	XMLName xml.Name `xml:"LocationConstraint"`
	Xmlns   string   `xml:"xmlns,attr"`
	Region  string   `xml:",chardata"`
}

// bucket serves the bucket-level calls on /{bucket}.
func (g *Gateway) bucket(w http.ResponseWriter, r *http.Request, rid, bucket string, q url.Values) {
	prefix, ok := g.prefixFor(bucket)
	if !ok {
		g.fail(w, r, rid, errNoSuchBucket(bucket), nil)
		return
	}
	_, location := q["location"]
	if g.cfg.Lister == nil {
		switch {
		case location: // the bucket is configured or assumed
			g.writeXML(w, r, rid, locationConstraint{Xmlns: s3Namespace, Region: g.cfg.Region})
		case r.Method == http.MethodHead: // HeadBucket: likewise
			w.WriteHeader(http.StatusOK)
		default:
			g.fail(w, r, rid, errNotImplemented("This gateway's backend cannot list objects; it serves GetObject and HeadObject."), nil)
		}
		return
	}
	if location || r.Method == http.MethodHead {
		// GetBucketLocation and HeadBucket: S3 answers NoSuchBucket for a
		// bucket that does not exist, so ask the origin whether it does.
		err := g.cfg.Lister.List(r.Context(), prefix, func(origin.Info) error { return errStopListing })
		if err != nil && !errors.Is(err, errStopListing) {
			g.fail(w, r, rid, errorFor(err, bucket, ""), err)
			return
		}
		if location {
			g.writeXML(w, r, rid, locationConstraint{Xmlns: s3Namespace, Region: g.cfg.Region})
			return
		}
		w.Header().Set("x-amz-bucket-region", regionOrDefault(g.cfg.Region))
		w.WriteHeader(http.StatusOK)
		return
	}
	g.listObjects(w, r, rid, bucket, prefix, q)
}

func regionOrDefault(r string) string {
	if r == "" {
		return "us-east-1"
	}
	return r
}

type listBucketResult struct {
	XMLName               xml.Name       `xml:"ListBucketResult"`
	Xmlns                 string         `xml:"xmlns,attr"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	Marker                *string        `xml:"Marker,omitempty"`
	NextMarker            string         `xml:"NextMarker,omitempty"`
	StartAfter            string         `xml:"StartAfter,omitempty"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	KeyCount              *int           `xml:"KeyCount,omitempty"`
	MaxKeys               int            `xml:"MaxKeys"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	EncodingType          string         `xml:"EncodingType,omitempty"`
	IsTruncated           bool           `xml:"IsTruncated"`
	Contents              []contentXML   `xml:"Contents"`
	CommonPrefixes        []commonPrefix `xml:"CommonPrefixes"`
}

type contentXML struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
	Owner        *owner `xml:"Owner,omitempty"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

// listObjects serves ListObjectsV2 (list-type=2) and ListObjects (v1).
func (g *Gateway) listObjects(w http.ResponseWriter, r *http.Request, rid, bucket, bucketPrefix string, q url.Values) {
	v2 := q.Get("list-type") == "2"
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	if g.escapesPrefix(prefix) {
		g.fail(w, r, rid, errEscapesPrefix(bucket, prefix), nil)
		return
	}
	maxKeys := maxListKeys
	if s := q.Get("max-keys"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			g.fail(w, r, rid, errInvalidArgument("max-keys must be an integer between 0 and 2147483647"), err)
			return
		}
		maxKeys = min(n, maxListKeys)
	}
	encURL := false
	switch et := q.Get("encoding-type"); et {
	case "":
	case "url":
		encURL = true
	default:
		g.fail(w, r, rid, errInvalidArgument("Invalid Encoding Method specified in Request: "+et), nil)
		return
	}
	var marker, token string
	if v2 {
		marker = q.Get("start-after")
		if t, ok := q["continuation-token"]; ok {
			raw, err := base64.RawURLEncoding.DecodeString(t[0])
			if err != nil || t[0] == "" {
				g.fail(w, r, rid, errInvalidArgument("The continuation token provided is incorrect"), err)
				return
			}
			token = t[0]
			marker = max(marker, string(raw))
		}
	} else {
		marker = q.Get("marker")
	}

	sel := newSelection(maxKeys + 1)
	err := g.cfg.Lister.List(r.Context(), objectURI(bucketPrefix, prefix), func(info origin.Info) error {
		key, ok := keyOf(bucketPrefix, info.URI)
		if !ok || !strings.HasPrefix(key, prefix) {
			return nil
		}
		name, isPrefix := key, false
		if delim != "" {
			if i := strings.Index(key[len(prefix):], delim); i >= 0 {
				name, isPrefix = key[:len(prefix)+i+len(delim)], true
			}
		}
		if name <= marker {
			return nil
		}
		sel.offer(listEntry{name: name, isPrefix: isPrefix, info: info})
		return nil
	})
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		g.fail(w, r, rid, errorFor(err, bucket, ""), err)
		return
	}
	entries := sel.sorted()
	// max-keys=0 is an empty page that is not truncated (as S3 answers):
	// a truncated page without a continuation token would have a client
	// ask for the same page for ever.
	truncated := maxKeys > 0 && len(entries) > maxKeys
	entries = entries[:min(len(entries), maxKeys)]

	enc := func(s string) string {
		if !encURL {
			return s
		}
		return strings.ReplaceAll(url.QueryEscape(s), "%2F", "/")
	}
	res := listBucketResult{
		Xmlns: s3Namespace, Name: bucket, Prefix: enc(prefix), MaxKeys: maxKeys,
		Delimiter: enc(delim), IsTruncated: truncated,
	}
	if encURL {
		res.EncodingType = "url"
	}
	for _, e := range entries {
		if e.isPrefix {
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: enc(e.name)})
			continue
		}
		c := contentXML{
			Key:          enc(e.name),
			LastModified: e.info.ModTime.UTC().Format(s3Time),
			ETag:         quoteETag(e.info.Version),
			Size:         e.info.Size,
			StorageClass: "STANDARD",
		}
		if !v2 || q.Get("fetch-owner") == "true" {
			c.Owner = &owner{ID: "locus", DisplayName: "locus"}
		}
		res.Contents = append(res.Contents, c)
	}
	var last string
	if len(entries) > 0 {
		last = entries[len(entries)-1].name
	}
	if v2 {
		n := len(entries)
		res.KeyCount = &n
		res.StartAfter = enc(q.Get("start-after"))
		res.ContinuationToken = token
		if truncated {
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(last))
		}
	} else {
		m := enc(marker)
		res.Marker = &m
		if truncated {
			res.NextMarker = enc(last)
		}
	}
	g.writeXML(w, r, rid, res)
}

// listEntry is a key or a common prefix of a listing page.
type listEntry struct {
	name     string
	isPrefix bool
	info     origin.Info
}

// selection keeps the limit smallest distinct entry names offered, in
// O(limit) memory, whatever order they come in: a max-heap on name plus a
// set of the names it holds.
type selection struct {
	limit int
	h     entryHeap
	names map[string]struct{}
}

func newSelection(limit int) *selection {
	return &selection{limit: limit, names: make(map[string]struct{})}
}

func (s *selection) offer(e listEntry) {
	if _, dup := s.names[e.name]; dup {
		return
	}
	if len(s.h) == s.limit {
		if s.limit == 0 || e.name >= s.h[0].name {
			return
		}
		old := heap.Pop(&s.h).(listEntry)
		delete(s.names, old.name)
	}
	heap.Push(&s.h, e)
	s.names[e.name] = struct{}{}
}

func (s *selection) sorted() []listEntry {
	out := slices.Clone(s.h)
	slices.SortFunc(out, func(a, b listEntry) int { return strings.Compare(a.name, b.name) })
	return out
}

// entryHeap is a max-heap of entries by name.
type entryHeap []listEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].name > h[j].name }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(listEntry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
