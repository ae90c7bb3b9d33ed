package schedulertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/locuscache/locus/pkg/schedapi"
)

// Client is a minimal JSON client of the scheduler's HTTP API for tests
// and benchmarks (the product client lives in pkg/client).
type Client struct {
	// Base is "http://host:port".
	Base string
	// Token, if set, is sent as the bearer token.
	Token string
	HTTP  *http.Client
	// StdJSON makes PlaceBatch and CompleteBatch use encoding/json instead
	// of the scheduler package's batch codec (the reference client of the
	// throughput benchmark).
	StdJSON bool
}

// NewClient returns a Client of the scheduler at addr (host:port) with a
// keep-alive transport sized for concurrent benchmarks.
func NewClient(addr string) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &Client{Base: "http://" + addr, HTTP: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

// StatusError is an answer with a status other than 200.
type StatusError struct {
	Code   int
	Body   schedapi.ErrorResponse
	Header http.Header
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body.Error)
}

// Do sends method path with body (marshalled to JSON unless it is a
// []byte or nil) and decodes a 200 answer into out (if not nil). Another
// status gives a *StatusError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	raw, err := c.DoRaw(ctx, method, path, body)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decoding the answer to %s %s: %w (%.200q)", method, path, err, raw)
	}
	return nil
}

// DoRaw is Do returning the body of a 200 answer undecoded.
func (c *Client) DoRaw(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{Code: resp.StatusCode, Header: resp.Header}
		if err := json.Unmarshal(raw, &se.Body); err != nil {
			se.Body.Error = fmt.Sprintf("(body is not an error object: %q)", raw)
		}
		return nil, se
	}
	return raw, nil
}

// Place calls POST /v1/place.
func (c *Client) Place(ctx context.Context, req schedapi.PlaceRequest) (schedapi.Placement, error) {
	var p schedapi.Placement
	err := c.Do(ctx, http.MethodPost, "/v1/place", req, &p)
	return p, err
}

// PlaceBatch calls POST /v1/place/batch.
func (c *Client) PlaceBatch(ctx context.Context, req schedapi.PlaceBatchRequest) (schedapi.PlaceBatchResponse, error) {
	var p schedapi.PlaceBatchResponse
	if c.StdJSON {
		err := c.Do(ctx, http.MethodPost, "/v1/place/batch", req, &p)
		return p, err
	}
	raw, err := c.DoRaw(ctx, http.MethodPost, "/v1/place/batch", schedapi.AppendPlaceBatchRequest(nil, &req))
	if err != nil {
		return p, err
	}
	return schedapi.DecodePlaceBatchResponse(raw)
}

// Complete calls POST /v1/complete.
func (c *Client) Complete(ctx context.Context, req schedapi.CompleteRequest) (schedapi.CompleteResponse, error) {
	var r schedapi.CompleteResponse
	err := c.Do(ctx, http.MethodPost, "/v1/complete", req, &r)
	return r, err
}

// CompleteBatch calls POST /v1/complete/batch.
func (c *Client) CompleteBatch(ctx context.Context, req schedapi.CompleteBatchRequest) (schedapi.CompleteBatchResponse, error) {
	var r schedapi.CompleteBatchResponse
	if c.StdJSON {
		err := c.Do(ctx, http.MethodPost, "/v1/complete/batch", req, &r)
		return r, err
	}
	raw, err := c.DoRaw(ctx, http.MethodPost, "/v1/complete/batch", schedapi.AppendCompleteBatchRequest(nil, &req))
	if err != nil {
		return r, err
	}
	return schedapi.DecodeCompleteBatchResponse(raw)
}

// Counters calls GET /v1/jobs/{job}, or GET /v1/counters for job "".
func (c *Client) Counters(ctx context.Context, job string) (schedapi.JobCounters, error) {
	var r schedapi.JobCounters
	path := "/v1/counters"
	if job != "" {
		path = "/v1/jobs/" + url.PathEscape(job)
	}
	err := c.Do(ctx, http.MethodGet, path, nil, &r)
	return r, err
}

// Ring calls GET /v1/ring.
func (c *Client) Ring(ctx context.Context) (schedapi.RingStatus, error) {
	var r schedapi.RingStatus
	err := c.Do(ctx, http.MethodGet, "/v1/ring", nil, &r)
	return r, err
}

// Lost calls GET /v1/lost?job=.
func (c *Client) Lost(ctx context.Context, job string) ([]schedapi.LostTask, error) {
	var r schedapi.LostResponse
	err := c.Do(ctx, http.MethodGet, "/v1/lost?job="+url.QueryEscape(job), nil, &r)
	return r.Lost, err
}
