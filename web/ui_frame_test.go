package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// TestUIFrameSkipLinkAndErrorAdvice: every page starts with a skip link to
// its content, and an error page says what to do next, by its status.
func TestUIFrameSkipLinkAndErrorAdvice(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		founder := e.signedIn(t, "f@example.com", domain.RoleFounder)
		// The inbox's skip link lands on its list, past the bulk box and the
		// filters; other pages' on their content.
		for path, link := range map[string]string{
			"/runs":  `<a href="#main" class="skip-link">Skip to content</a>`,
			"/inbox": `<a href="#requests" class="skip-link">Skip to the requests</a>`,
		} {
			p := rev.get(path)
			wantPage(t, p, http.StatusOK, `<main id="main"`)
			if body := p.Body[strings.Index(p.Body, "<body>"):]; !strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(body, "<body>")), link) {
				t.Fatalf("%s does not open with its skip link:\n%s", path, body)
			}
		}
		wantPage(t, rev.get("/runs/nope"), http.StatusNotFound, "Error 404", "Run not found", "may be mistyped", `href="/" role="button"`)
		wantPage(t, founder.get("/inbox"), http.StatusForbidden, "Error 403", "ask an admin")
	})
}
