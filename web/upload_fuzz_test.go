package web_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// Any body posted to a request's upload form, whatever its multipart
// boundaries, parts, names and bytes, is answered without a panic or a
// server error: stored, or refused in words.
func FuzzUploadDocuments(f *testing.F) {
	var seed bytes.Buffer
	mw := multipart.NewWriter(&seed)
	w, _ := mw.CreateFormFile("files", "statement.pdf")
	_, _ = w.Write(pdfBytes)
	_ = mw.Close()
	f.Add(mw.Boundary(), seed.Bytes())
	f.Add("x", []byte("--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.png\"\r\n\r\n\x89PNG\r\n--x--\r\n"))
	f.Add("x", []byte("--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"../../etc/passwd\"\r\n\r\n%PDF-1.4\r\n--x"))
	f.Add("b", []byte("not multipart at all"))
	e := newAPIEnv(f, storage.Opts{SQLitePath: filepath.Join(f.TempDir(), "tollgate.db")}, withSmallUploads)
	founder := e.signedIn(f, "fuzz@founders.example", domain.RoleFounder)
	_, sp := e.paused(f, "paperwork", map[string]string{"assignee": "fuzz@founders.example"})
	f.Fuzz(func(t *testing.T, boundary string, body []byte) {
		if strings.ContainsFunc(boundary, func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
			return // no client sends such a header: Go's refuses to
		}
		req, err := http.NewRequestWithContext(t.Context(), "POST", founder.base+"/suspensions/"+sp.ID+"/documents", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		resp, err := founder.hc.Do(req)
		if err != nil {
			return // the server may close a refused upload before reading it all
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("an upload answered %d (boundary %q, %d bytes)", resp.StatusCode, boundary, len(body))
		}
	})
}
