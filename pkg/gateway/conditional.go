package gateway

import (
	"net/http"
	"strings"
	"time"
)

// Conditional requests, evaluated as RFC 9110 section 13.2.2 orders them and
// as S3's GetObject and HeadObject document:
//
//  1. If-Match present and false                          → 412
//     (If-Match true makes If-Unmodified-Since irrelevant: S3 sends 200)
//  2. else If-Unmodified-Since present and false          → 412
//  3. If-None-Match present and false (an ETag matches)   → 304
//     (If-None-Match present makes If-Modified-Since irrelevant)
//  4. else If-Modified-Since present and false            → 304
//  5. If-Range present and false                          → ignore Range
//
// An unparseable date makes its header count as absent (RFC 9110). Dates are
// compared at one-second granularity, as HTTP dates carry. An object whose
// modification time is unknown (zero) passes every date condition. ETags
// are compared without their quotes, and weakly for If-None-Match (a W/
// prefix is ignored) but strongly for If-Match and If-Range (a weak tag
// never matches), so a client that sends an ETag unquoted still matches.

// precondition returns 0 when the request may proceed, or
// http.StatusPreconditionFailed / http.StatusNotModified.
func precondition(h http.Header, etag string, mod time.Time) int {
	if im := h.Get("If-Match"); im != "" {
		if !etagListMatches(im, etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if t, ok := headerTime(h, "If-Unmodified-Since"); ok && !mod.IsZero() {
		if mod.Truncate(time.Second).After(t) {
			return http.StatusPreconditionFailed
		}
	}
	if inm := h.Get("If-None-Match"); inm != "" {
		if etagListMatches(inm, etag, true) {
			return http.StatusNotModified
		}
	} else if t, ok := headerTime(h, "If-Modified-Since"); ok && !mod.IsZero() {
		if !mod.Truncate(time.Second).After(t) {
			return http.StatusNotModified
		}
	}
	return 0
}

// namesOtherETag reports whether the request names a version by ETag that
// is not etag, in If-None-Match (not "*") or in an If-Range that governs a
// Range: the client may know a newer version than a cached Stat answer
// (it would get 200 with the old bytes instead of 304, or the whole old
// object instead of its range of the new one), so the gateway revalidates
// first. A client whose ETag matches costs nothing; one that names another
// costs one origin Stat (as a read of a named version does on gRPC).
func namesOtherETag(h http.Header, etag string) bool {
	if inm := strings.TrimSpace(h.Get("If-None-Match")); inm != "" && inm != "*" && !etagListMatches(inm, etag, true) {
		return true
	}
	ir := strings.TrimSpace(h.Get("If-Range"))
	if h.Get("Range") == "" || !strings.HasPrefix(ir, `"`) {
		return false // no range to govern, a date, or a weak tag (never matches)
	}
	return !etagListMatches(ir, etag, false)
}

// rangeApplies reports whether a Range header should be honoured given
// If-Range: true without If-Range, or when its ETag (strong comparison) or
// date (exactly the object's Last-Modified) still describes the object.
func rangeApplies(h http.Header, etag string, mod time.Time) bool {
	ir := strings.TrimSpace(h.Get("If-Range"))
	if ir == "" {
		return true
	}
	if strings.HasPrefix(ir, `"`) || strings.HasPrefix(ir, "W/") {
		return etagListMatches(ir, etag, false)
	}
	t, err := http.ParseTime(ir)
	if err != nil || mod.IsZero() {
		return false
	}
	return mod.Truncate(time.Second).Equal(t)
}

func headerTime(h http.Header, name string) (time.Time, bool) {
	v := h.Get(name)
	if v == "" {
		return time.Time{}, false
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// etagListMatches reports whether list ("*", or comma-separated entity tags,
// quoted or not, possibly W/-prefixed) matches etag (itself possibly weak,
// as some S3-compatible stores send it). With weak set, W/ tags compare by
// their opaque value; without it a weak tag on either side never matches.
func etagListMatches(list, etag string, weak bool) bool {
	want := unquote(etag)
	weakETag := strings.HasPrefix(etag, "W/")
	list = strings.TrimSpace(list)
	if list == "*" {
		return true
	}
	for list != "" {
		list = strings.TrimLeft(list, " \t,")
		if list == "" {
			break
		}
		isWeak := false
		if strings.HasPrefix(list, "W/") {
			isWeak = true
			list = list[2:]
		}
		var tag string
		if strings.HasPrefix(list, `"`) {
			end := strings.IndexByte(list[1:], '"')
			if end < 0 { // unterminated: take the rest
				tag, list = list[1:], ""
			} else {
				tag, list = list[1:1+end], list[2+end:]
			}
		} else {
			i := strings.IndexByte(list, ',')
			if i < 0 {
				i = len(list)
			}
			tag, list = strings.TrimSpace(list[:i]), list[i:]
		}
		if tag == "*" {
			return true
		}
		if (weak || !isWeak && !weakETag) && tag == want {
			return true
		}
	}
	return false
}

// unquote strips one pair of surrounding double quotes (and a W/ prefix).
func unquote(etag string) string {
	etag = strings.TrimPrefix(etag, "W/")
	if len(etag) >= 2 && etag[0] == '"' && etag[len(etag)-1] == '"' {
		return etag[1 : len(etag)-1]
	}
	return etag
}

// quoteETag renders a version as an HTTP entity tag: S3 versions already
// carry their quotes (a weak one its W/ prefix too, as the store sent it:
// origin.NormalizeETag); other versions (file size+mtime, test stores) get
// them.
func quoteETag(version string) string {
	quoted := strings.TrimPrefix(version, "W/")
	if len(quoted) >= 2 && quoted[0] == '"' && quoted[len(quoted)-1] == '"' {
		return version
	}
	return `"` + version + `"`
}
