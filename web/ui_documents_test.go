package web_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
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
		wantPage(t, a.get(path), http.StatusOK, `enctype="multipart/form-data"`, `accept="application/pdf,image/png"`, "PDF or PNG image, up to 4 KB each")

		// Refused uploads store nothing and leave the suspension pending.
		wantPage(t, a.upload(path+"/documents", file{"claim.pdf", []byte("<html><script>alert(1)</script></html>")}), http.StatusUnprocessableEntity, "claim.pdf is not a PDF or PNG image, so it cannot be sent here")
		// The status follows from the refusal, not from words in the file's name.
		wantPage(t, a.upload(path+"/documents", file{"larger.exe", []byte("MZ\x90\x00\x03\x00\x00\x00")}), http.StatusUnprocessableEntity, "larger.exe is not a PDF or PNG image, so it cannot be sent here")
		wantPage(t, a.upload(path+"/documents", file{"ok.pdf", pdfBytes}, file{"big.pdf", append(append([]byte{}, pdfBytes...), make([]byte, 5<<10)...)}), http.StatusRequestEntityTooLarge, "big.pdf is larger than 4 KB")
		wantPage(t, a.upload(path+"/documents", file{"empty.pdf", nil}), http.StatusUnprocessableEntity, "empty.pdf is empty")
		wantPage(t, a.upload(path+"/documents"), http.StatusUnprocessableEntity, "Choose at least one file")
		if n := storedRows(t, e, s.ID); n != 0 {
			t.Fatalf("%d rows kept from refused uploads", n)
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
		wantPage(t, r.upload(path+"/documents", file{"late.pdf", pdfBytes}), http.StatusConflict, "a@founders.example resumed this")
		if docs, _ := e.db.Documents(t.Context(), s.ID); len(docs) != 2 {
			t.Fatalf("%d documents after a losing upload; want the winner's 2", len(docs))
		}
		entries, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Action: "document.upload"})
		if len(entries) != 2 {
			t.Fatalf("%d upload audit entries; want 2", len(entries))
		}
	})
}

// storedRows counts a suspension's document rows, staged or not, and
// their chunks.
func storedRows(t *testing.T, e *apiEnv, suspensionID string) int {
	t.Helper()
	var n int
	err := e.db.Bun().QueryRowContext(t.Context(), "SELECT (SELECT count(*) FROM documents WHERE suspension_id = ?) + "+
		"(SELECT count(*) FROM document_chunks c JOIN documents d ON d.id = c.document_id WHERE d.suspension_id = ?)", suspensionID, suspensionID).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// spyStore is the real store, watching what uploads hand it: the largest
// single read of a document's content, and a signal once a document's
// content starts to arrive.
type spyStore struct {
	web.UIStore
	maxRead atomic.Int64
	reading chan struct{} // signalled (if empty) when a document's content starts arriving
}

func (s *spyStore) AddDocument(ctx context.Context, d domain.Document, content io.Reader) (domain.Document, error) {
	first := true
	return s.UIStore.AddDocument(ctx, d, readerFunc(func(p []byte) (int, error) {
		n, err := content.Read(p)
		for {
			old := s.maxRead.Load()
			if int64(n) <= old || s.maxRead.CompareAndSwap(old, int64(n)) {
				break
			}
		}
		if first && n > 0 {
			first = false
			select {
			case s.reading <- struct{}{}:
			default:
			}
		}
		return n, err
	}))
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func withSpy(spy *spyStore) func(*web.Server) {
	return func(s *web.Server) {
		withUI(s)
		spy.UIStore = s.UIStore
		s.UIStore = spy
	}
}

// pipedUpload starts posting one file whose content is written by write,
// through a pipe, so that the test decides when each part of it arrives.
// The page comes on the returned channel.
func (b *browser) pipedUpload(path, name string, write func(io.Writer) error) <-chan page {
	b.t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		w, err := mw.CreateFormFile("files", name)
		if err == nil {
			err = write(w)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(b.t.Context(), "POST", b.base+path, pr)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	out := make(chan page, 1)
	go func() {
		resp, err := b.hc.Do(req)
		if err != nil {
			out <- page{Body: err.Error()}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		out <- page{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
	}()
	return out
}

func waitSignal(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// An 8 MiB upload (32 chunks) reaches the store while it is still being sent, in
// reads of at most 1 MiB: nothing holds the whole file. Its download is
// the same bytes.
func TestUIUploadStreams(t *testing.T) {
	t.Parallel()
	spy := &spyStore{reading: make(chan struct{}, 1)}
	configure := func(s *web.Server) { withSpy(spy)(s); s.UploadLimit = 16 << 20 }
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, configure)
	run, s := e.paused(t, "paperwork", map[string]string{"assignee": "a@founders.example"})
	a := e.signedIn(t, "a@founders.example", domain.RoleFounder)

	const size = 8 << 20
	content := func(w io.Writer, from, to int) error {
		block := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		copy(block, pdfBytes)
		for at := from; at < to; at += len(block) {
			if _, err := w.Write(block[:min(len(block), to-at)]); err != nil {
				return err
			}
		}
		return nil
	}
	var whole bytes.Buffer
	_ = content(&whole, 0, size)
	sum := sha256.Sum256(whole.Bytes())
	done := a.pipedUpload("/suspensions/"+s.ID+"/documents", "statement.pdf", func(w io.Writer) error {
		if err := content(w, 0, 2<<20); err != nil {
			return err
		}
		select { // the rest is sent only once the store has begun to read
		case <-spy.reading:
		case <-time.After(20 * time.Second):
			return errors.New("the store saw nothing of the file while it was being sent")
		}
		return content(w, 2<<20, size)
	})
	if p := <-done; p.Status != http.StatusSeeOther {
		t.Fatalf("upload = %d: %s", p.Status, p.Body)
	}
	if got := spy.maxRead.Load(); got > 1<<20 || got == 0 {
		t.Fatalf("the store read %d bytes at once; want at most 1 MiB", got)
	}
	e.waitRun(t, run.ID, "succeeded")
	docs, err := e.db.Documents(t.Context(), s.ID)
	if err != nil || len(docs) != 1 || docs[0].Size != size || !bytes.Equal(docs[0].SHA256, sum[:]) {
		t.Fatalf("documents = %+v, %v", docs, err)
	}
	dl := a.get("/documents/" + docs[0].ID)
	if got := sha256.Sum256([]byte(dl.Body)); dl.Status != http.StatusOK || got != sum || dl.Header.Get("Content-Length") != strconv.Itoa(size) {
		t.Fatalf("download = %d, %d bytes, same %v", dl.Status, len(dl.Body), got == sum)
	}
}

// The stored name follows the bytes, not the browser: PNG bytes named
// report.html are report.png; bidi overrides and paths are dropped; the
// download offers the cleaned name as an attachment.
func TestUIUploadNames(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withSmallUploads)
	_, s := e.paused(t, "paperwork", map[string]string{"assignee": "a@founders.example"})
	a := e.signedIn(t, "a@founders.example", domain.RoleFounder)
	p := a.upload("/suspensions/"+s.ID+"/documents", file{"../report.html", pngBytes}, file{"invoice\u202Egnp.exe", pngBytes}, file{`C:\tmp\..\Q3; résumé "final".pdf`, pdfBytes})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("upload = %d: %s", p.Status, p.Body)
	}
	docs, err := e.db.Documents(t.Context(), s.ID)
	if err != nil || len(docs) != 3 {
		t.Fatalf("documents = %+v, %v", docs, err)
	}
	want := []struct{ name, disposition string }{
		{"report.png", `attachment; filename="report.png"; filename*=UTF-8''report.png`},
		{"invoicegnp.png", `attachment; filename="invoicegnp.png"; filename*=UTF-8''invoicegnp.png`},
		{`Q3; résumé "final".pdf`, `attachment; filename="Q3; r_sum_ _final_.pdf"; filename*=UTF-8''Q3%3B%20r%C3%A9sum%C3%A9%20%22final%22.pdf`},
	}
	for i, d := range docs {
		if d.Filename != want[i].name {
			t.Errorf("document %d is named %q; want %q", i, d.Filename, want[i].name)
		}
		dl := a.get("/documents/" + d.ID)
		if got := dl.Header.Get("Content-Disposition"); dl.Status != http.StatusOK || got != want[i].disposition {
			t.Errorf("download %d: %d, Content-Disposition %s; want %s", i, dl.Status, got, want[i].disposition)
		}
	}
}

// Uploads in flight are bounded per person and per process: beyond, 429
// with a Retry-After and a sentence on the page. One request is bounded in
// all its files, and a refused request leaves nothing behind.
func TestUIUploadLimits(t *testing.T) {
	t.Parallel()
	spy := &spyStore{reading: make(chan struct{}, 1)}
	configure := func(s *web.Server) {
		withSpy(spy)(s)
		s.UploadLimit, s.UploadRequestLimit, s.UploadsPerUser, s.UploadsInFlight = 4<<10, 6<<10, 1, 1
	}
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, configure)
	_, sa := e.paused(t, "paperwork", map[string]string{"assignee": "a@founders.example"})
	_, sb := e.paused(t, "paperwork", map[string]string{"assignee": "b@founders.example"})
	a := e.signedIn(t, "a@founders.example", domain.RoleFounder)
	b := e.signedIn(t, "b@founders.example", domain.RoleFounder)

	release := make(chan struct{})
	held := a.pipedUpload("/suspensions/"+sa.ID+"/documents", "held.pdf", func(w io.Writer) error {
		if _, err := w.Write(append(append([]byte{}, pdfBytes...), make([]byte, 1<<10)...)); err != nil {
			return err // more than the 512 bytes sniffed: the store sees the file begin
		}
		<-release
		return nil
	})
	waitSignal(t, spy.reading, "the held upload to reach the store")
	p := a.upload("/suspensions/"+sa.ID+"/documents", file{"again.pdf", pdfBytes})
	wantPage(t, p, http.StatusTooManyRequests, "You already have an upload in progress")
	if p.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	wantPage(t, b.upload("/suspensions/"+sb.ID+"/documents", file{"b.pdf", pdfBytes}), http.StatusTooManyRequests, "The server is busy with other uploads")
	close(release)
	if p := <-held; p.Status != http.StatusSeeOther {
		t.Fatalf("held upload = %d: %s", p.Status, p.Body)
	}

	// Each file fits, all together do not.
	three := append(append([]byte{}, pdfBytes...), make([]byte, 3<<10)...)
	wantPage(t, b.upload("/suspensions/"+sb.ID+"/documents", file{"one.pdf", three}, file{"two.pdf", three}), http.StatusRequestEntityTooLarge, "6 KB at once")
	if n := storedRows(t, e, sb.ID); n != 0 {
		t.Fatalf("%d rows kept from a refused upload", n)
	}
	e.stillPending(t, sb)
	if p := b.upload("/suspensions/"+sb.ID+"/documents", file{"one.pdf", three}); p.Status != http.StatusSeeOther {
		t.Fatalf("upload after the others finished = %d: %s", p.Status, p.Body)
	}
}

// Resume data may name only documents uploaded to the suspension: made-up
// ids are refused with unknown_document through the API (by id and by step
// key) and the resume form, and nothing changes; the upload's own ids
// resume it.
func TestResumeNamesOnlyUploadedDocuments(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withSmallUploads, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "paperwork", map[string]string{"assignee": "a@founders.example"})
		_, other := e.paused(t, "paperwork", map[string]string{"assignee": "a@founders.example"})
		a := e.signedIn(t, "a@founders.example", domain.RoleFounder)
		if p := a.upload("/suspensions/"+other.ID+"/documents", file{"other.pdf", pdfBytes}); p.Status != http.StatusSeeOther {
			t.Fatalf("upload to the other suspension = %d: %s", p.Status, p.Body)
		}
		elsewhere, err := e.db.Documents(t.Context(), other.ID)
		if err != nil || len(elsewhere) != 1 {
			t.Fatalf("documents of the other suspension = %+v, %v", elsewhere, err)
		}

		for _, ids := range [][]string{{"made-up"}, {elsewhere[0].ID}} {
			body := jsonString(map[string]any{"resumeData": map[string]any{"documentIds": ids}})
			p := problem(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, body), http.StatusUnprocessableEntity, "unknown_document")
			if !hasField(p, "/resumeData/documentIds/0") {
				t.Errorf("errors %+v do not name /resumeData/documentIds/0", p.Errors)
			}
			problem(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/steps/ask/resume", e.admin, body), http.StatusUnprocessableEntity, "unknown_document")
		}
		wantPage(t, a.do("POST", "/suspensions/"+s.ID+"/resume", url.Values{"mode": {"fields"}, "f/documentIds": {"made-up"}}),
			http.StatusUnprocessableEntity, "no document with this id was uploaded to this request")
		e.stillPending(t, s)

		if p := a.upload("/suspensions/"+s.ID+"/documents", file{"mine.pdf", pdfBytes}); p.Status != http.StatusSeeOther {
			t.Fatalf("upload = %d: %s", p.Status, p.Body)
		}
		e.waitRun(t, run.ID, "succeeded")
	})
}

// An upload that takes longer than the server's read and write timeouts
// succeeds while it keeps making progress.
func TestUIUploadOutlastsServerTimeouts(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withSmallUploads)
	slow := httptest.NewUnstartedServer(e.srv.Config.Handler)
	slow.Config.ReadTimeout, slow.Config.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
	slow.Start()
	t.Cleanup(slow.Close)
	run, s := e.paused(t, "paperwork", map[string]string{"assignee": "a@founders.example"})
	a := e.signedIn(t, "a@founders.example", domain.RoleFounder)
	a.base = slow.URL // the session cookie is the host's, whatever the port
	p := <-a.pipedUpload("/suspensions/"+s.ID+"/documents", "slow.pdf", func(w io.Writer) error {
		if _, err := w.Write(append(append([]byte{}, pdfBytes...), make([]byte, 600)...)); err != nil {
			return err
		}
		for range 8 {
			time.Sleep(200 * time.Millisecond)
			if _, err := w.Write(make([]byte, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("slow upload = %d: %s", p.Status, p.Body)
	}
	e.waitRun(t, run.ID, "succeeded")
}
