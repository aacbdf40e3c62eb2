package web_test

import (
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// Guessing tokens of capability URLs is slowed: an address that sent too
// many tokens matching nothing is answered 429 with a Retry-After on every
// capability URL, while good calls and other addresses are not counted.
func TestGuessedTokensAreThrottled(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) {
		withFlows(s)
		s.TokenMissLimit = 3
	})
	for i := range 3 {
		r := e.call(t, "POST", "/v1/flow-runs/r-1/waitpoints/w-"+strconv.Itoa(i)+"?token=guess-"+strconv.Itoa(i), "", `{}`)
		want(t, r, http.StatusNotFound)
	}
	r := e.call(t, "POST", "/v1/flow-runs/r-1/waitpoints/w-9?token=guess-9", "", `{}`)
	problem(t, r, http.StatusTooManyRequests, web.CodeTooManyInvalidTokens)
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 15*60+1 {
		t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	problem(t, e.call(t, "POST", "/webhook/review/ask/another-guess", "", `{"success": true}`), http.StatusTooManyRequests, web.CodeTooManyInvalidTokens)
	// Requests that carry no token are not capability URLs: not refused.
	want(t, e.call(t, "GET", "/healthz", "", ""), http.StatusOK)
}
