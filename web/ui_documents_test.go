package web_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

var (
	pdfBytes = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << >>\n%%EOF\n")
	pngBytes = append([]byte("\x89PNG\x0d\x0a\x1a\x0a\x00\x00\x00\x0dIHDR"), make([]byte, 64)...)
)

type file struct {
	name string
	data []byte
}

// upload posts files as a browser's multipart form would.
func (b *browser) upload(path string, files ...file) page {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range files {
		w, err := mw.CreateFormFile("files", f.name)
		if err != nil {
			b.t.Fatal(err)
		}
		_, _ = w.Write(f.data)
	}
	_ = mw.Close()
	req, err := http.NewRequestWithContext(b.t.Context(), "POST", b.base+path, &body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return b.send(req)
}

func withSmallUploads(s *web.Server) {
	withUI(s)
	s.UploadLimit = 4 << 10
}

func TestUIFounderUploadsDocuments(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withSmallUploads, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "paperwork", map[string]string{"assignee": "a@founders.example"})
		path := "/suspensions/" + s.ID
		a := e.signedIn(t, "a@founders.example", domain.RoleFounder)
		wantPage(t, a.get(path), http.StatusOK, `enctype="multipart/form-data"`, `accept="application/pdf,image/png"`, "Accepted: PDF, PNG", "4.0 KiB")

		// Refused uploads store nothing and leave the suspension pending.
		wantPage(t, a.upload(path+"/documents", file{"claim.pdf", []byte("<html><script>alert(1)</script></html>")}), http.StatusUnprocessableEntity, "claim.pdf is text/html, which this request does not accept")
		// The status follows from the refusal, not from words in the file's name.
		wantPage(t, a.upload(path+"/documents", file{"larger.exe", []byte("MZ\x90\x00\x03\x00\x00\x00")}), http.StatusUnprocessableEntity, "larger.exe is application/octet-stream, which this request does not accept")
		wantPage(t, a.upload(path+"/documents", file{"ok.pdf", pdfBytes}, file{"big.pdf", append(append([]byte{}, pdfBytes...), make([]byte, 5<<10)...)}), http.StatusRequestEntityTooLarge, "big.pdf is larger than 4 KiB")
		wantPage(t, a.upload(path+"/documents", file{"empty.pdf", nil}), http.StatusUnprocessableEntity, "empty.pdf is empty")
		wantPage(t, a.upload(path+"/documents"), http.StatusUnprocessableEntity, "Choose at least one file")
		if docs, _ := e.db.Documents(t.Context(), s.ID); len(docs) != 0 {
			t.Fatalf("%d documents kept from refused uploads", len(docs))
		}
		e.stillPending(t, s)

		// Another founder can neither see nor upload to it.
		b := e.signedIn(t, "b@founders.example", domain.RoleFounder)
		wantPage(t, b.upload(path+"/documents", file{"x.pdf", pdfBytes}), http.StatusNotFound)

		p := a.upload(path+"/documents", file{`..\evil/claim "Q3".pdf`, pdfBytes}, file{"scan.png", pngBytes})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("upload = %d:\n%s", p.Status, p.Body)
		}
		done := e.waitRun(t, run.ID, "succeeded")
		var out struct{ DocumentIDs []string }
		if err := json.Unmarshal(done.Output, &out); err != nil || len(out.DocumentIDs) != 2 {
			t.Fatalf("run output %s: want two document ids", done.Output)
		}
		docs, err := e.db.Documents(t.Context(), s.ID)
		if err != nil || len(docs) != 2 || docs[0].Filename != `claim "Q3".pdf` || docs[0].ContentType != "application/pdf" || docs[1].ContentType != "image/png" || docs[0].UploaderEmail != "a@founders.example" {
			t.Fatalf("documents = %+v, %v", docs, err)
		}
		page := a.get(path)
		wantPage(t, page, http.StatusOK, "/documents/"+docs[0].ID, `claim &#34;Q3&#34;.pdf`)

		// Downloads: the uploader and reviewers; never another founder.
		dl := a.get("/documents/" + docs[0].ID)
		if dl.Status != http.StatusOK || dl.Body != string(pdfBytes) || dl.Header.Get("Content-Type") != "application/pdf" ||
			!strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment;") || dl.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("download = %d %v", dl.Status, dl.Header)
		}
		wantPage(t, b.get("/documents/"+docs[0].ID), http.StatusNotFound, "Document not found")
		r := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		if dl := r.get("/documents/" + docs[1].ID); dl.Status != http.StatusOK || dl.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("reviewer download = %d %q", dl.Status, dl.Header.Get("Content-Type"))
		}
		// A late upload loses like any resume, and its files are not kept.
		wantPage(t, r.upload(path+"/documents", file{"late.pdf", pdfBytes}), http.StatusConflict, "Already resumed by a@founders.example")
		if docs, _ := e.db.Documents(t.Context(), s.ID); len(docs) != 2 {
			t.Fatalf("%d documents after a losing upload; want the winner's 2", len(docs))
		}
		entries, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Action: "document.upload"})
		if len(entries) != 2 {
			t.Fatalf("%d upload audit entries; want 2", len(entries))
		}
	})
}
