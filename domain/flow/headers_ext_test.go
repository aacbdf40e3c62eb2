package flow_test

import (
	"slices"
	"strings"
	"testing"
)

// A webhook step's responseToSend may not set headers that act on the
// app's origin or frame the message, in any case; each is reported.
func TestParseRefusesOriginResponseHeaders(t *testing.T) {
	t.Parallel()
	got := problems(t, `{"id": "hook", "version": "1", "steps": [{"type": "webhook", "name": "w", "responseToSend": {"headers": {
		"Location": "/x", "refresh": "0", "Clear-Site-Data": "*", "Set-Cookie": "a=b", "access-control-allow-origin": "*",
		"Transfer-Encoding": "chunked", "Content-Length": "1", "X-Fine": "yes", "X-Bad": "a\nb"}}}]}`)
	const at = "steps[0].responseToSend.headers"
	for _, h := range []string{"Location", "refresh", "Clear-Site-Data", "Set-Cookie", "access-control-allow-origin", "Transfer-Encoding", "Content-Length", "X-Bad"} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, at+"."+h+": ") }) {
			t.Errorf("%s is not refused: %v", h, got)
		}
	}
	if len(got) != 8 {
		t.Errorf("problems: %v", got)
	}
}
