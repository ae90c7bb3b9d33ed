package schedapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

// TestErrorCodes: each code names its sentinel and status; not_found is a
// 400 like bad_request, and only the sentinel tells them apart.
func TestErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		code   string
		err    error
		status int
	}{
		{"", nil, http.StatusOK},
		{CodeBadRequest, ErrBadRequest, http.StatusBadRequest},
		{CodeNotFound, ErrNotFound, http.StatusBadRequest},
		{CodeUnauthorized, ErrUnauthorized, http.StatusUnauthorized},
		{CodeConflict, ErrConflict, http.StatusConflict},
		{CodeTooLarge, ErrTooLarge, http.StatusRequestEntityTooLarge},
		{CodeNoNode, ErrNoNode, http.StatusServiceUnavailable},
		{CodeNotLeader, ErrNotLeader, http.StatusServiceUnavailable},
		{CodeUnavailable, ErrUnavailable, http.StatusServiceUnavailable},
		{CodeInternal, nil, http.StatusInternalServerError},
		{CodeNoEndpoint, nil, http.StatusNotFound},
		{CodeMethodNotAllowed, nil, http.StatusMethodNotAllowed},
		{"from_the_future", nil, http.StatusInternalServerError},
	} {
		if got := ErrOfCode(tc.code); got != tc.err {
			t.Errorf("ErrOfCode(%q) = %v, want %v", tc.code, got, tc.err)
		}
		if got := StatusOfCode(tc.code); got != tc.status {
			t.Errorf("StatusOfCode(%q) = %d, want %d", tc.code, got, tc.status)
		}
	}
	if errors.Is(ErrOfCode(CodeNotFound), ErrBadRequest) {
		t.Error("not_found is ErrBadRequest too: clients could not tell them apart")
	}
}

// TestErrorResponseJSON: the body's shape; an older scheduler's body
// (no code) still decodes.
func TestErrorResponseJSON(t *testing.T) {
	b, err := json.Marshal(ErrorResponse{Error: "not found: job \"j\"", Code: CodeNotFound})
	if err != nil || string(b) != `{"error":"not found: job \"j\"","code":"not_found"}` {
		t.Errorf("encoded %s (%v)", b, err)
	}
	var er ErrorResponse
	if err := json.Unmarshal([]byte(`{"error":"not found"}`), &er); err != nil || er.Code != "" || er.Error != "not found" {
		t.Errorf("old body: %+v %v", er, err)
	}
}
