package ui

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// downloadDocument serves a document to whoever may see its suspension, as
// an attachment of its sniffed type: never rendered as a page of this
// site. The content is copied from the store one chunk at a time.
func (s *pages) downloadDocument(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	notFound := func() {
		s.RenderError(w, r, http.StatusNotFound, "Document not found", "There is no document here that you can see.", v)
	}
	d, err := s.UIStore.Document(r.Context(), r.PathValue("id"))
	if errors.Is(err, domain.ErrNotFound) {
		notFound()
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	if _, err := s.VisibleSuspension(r, web.ViewerPrincipal(v), d.SuspensionID); err != nil {
		notFound()
		return
	}
	h := w.Header()
	h.Set("Content-Type", d.ContentType)
	h.Set("Content-Length", strconv.FormatInt(d.Size, 10))
	h.Set("Content-Disposition", attachment(d.Filename))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, no-store")
	if _, err := s.UIStore.CopyDocument(r.Context(), d.ID, web.NewProgressWriter(w)); err != nil && r.Context().Err() == nil {
		// The status is sent; the client sees a short body.
		s.Log.ErrorContext(r.Context(), "Serving a document failed", "document_id", d.ID, "error", err)
	}
}

// attachment is a Content-Disposition that offers name as a download
// (RFC 6266): filename*= with the name in UTF-8, percent-encoded except
// for RFC 8187's attr-chars, and a plain filename= fallback for old
// clients with what is not printable ASCII (and quotes and backslashes)
// replaced by '_'.
func attachment(name string) string {
	var ext, fallback strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if attrChar(c) {
			ext.WriteByte(c)
		} else {
			ext.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c), 16)))
		}
	}
	for _, r := range name {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			r = '_'
		}
		fallback.WriteRune(r)
	}
	return `attachment; filename="` + fallback.String() + `"; filename*=UTF-8''` + ext.String()
}

// attrChar is RFC 8187's attr-char: what filename*= may carry unencoded.
func attrChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}
