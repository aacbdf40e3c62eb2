package web_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// multipartBody is files as a multipart form's "files" parts, and its
// Content-Type.
func multipartBody(t testing.TB, files ...file) (string, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range files {
		w, err := mw.CreateFormFile("files", f.name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(f.data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return body.String(), mw.FormDataContentType()
}

// uploadAPI posts files to a suspension's documents with an API key.
func (e *apiEnv) uploadAPI(t testing.TB, suspensionID, key string, files ...file) reply {
	t.Helper()
	body, ct := multipartBody(t, files...)
	return e.call(t, "POST", "/api/v1/suspensions/"+suspensionID+"/documents", key, body, "Content-Type", ct)
}

// An integrator's portal uploads a founder's documents with the founder's
// key, as the page does: the same checks and limits, the founder's own
// requests only, and the run goes on with the documents.
func TestAPIUploadsDocuments(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withSmallUploads, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "paperwork", map[string]string{"assignee": founderAEmail})

		// Refused uploads store nothing and leave the request pending.
		p := problem(t, e.uploadAPI(t, s.ID, e.founderA, file{"claim.pdf", []byte("<html><script>alert(1)</script></html>")}), http.StatusUnprocessableEntity, domain.CodeValidation)
		if len(p.Errors) != 1 || p.Errors[0].File != "claim.pdf" {
			t.Errorf("a file of the wrong type: %+v; want the file named", p)
		}
		problem(t, e.uploadAPI(t, s.ID, e.founderA, file{"big.pdf", append(append([]byte{}, pdfBytes...), make([]byte, 5<<10)...)}), http.StatusRequestEntityTooLarge, "payload_too_large")
		problem(t, e.uploadAPI(t, s.ID, e.founderA), http.StatusUnprocessableEntity, domain.CodeValidation)
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/documents", e.founderA, `{"files": []}`), http.StatusBadRequest, "upload_unreadable")
		if n := storedRows(t, e, s.ID); n != 0 {
			t.Fatalf("%d rows kept from refused uploads", n)
		}
		e.stillPending(t, s)

		// Another founder's key does not reach it; nor does an upload to a
		// request that asks for no documents.
		problem(t, e.uploadAPI(t, s.ID, e.founderB, file{"x.pdf", pdfBytes}), http.StatusNotFound, domain.CodeNotFound)
		_, approval := e.paused(t, "review", map[string]string{"claimId": "c-9"})
		problem(t, e.uploadAPI(t, approval.ID, e.admin, file{"x.pdf", pdfBytes}), http.StatusUnprocessableEntity, domain.CodeValidation)

		var got struct {
			Suspension suspensionBody
			Documents  []struct{ ID, Filename, ContentType, SHA256, UploadedBy string }
		}
		if err := json.Unmarshal(e.uploadAPI(t, s.ID, e.founderA, file{"claim.pdf", pdfBytes}, file{"scan.png", pngBytes}).Body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Suspension.ID != s.ID || got.Suspension.Status != "resumed" || len(got.Documents) != 2 ||
			got.Documents[0].ContentType != "application/pdf" || got.Documents[1].ContentType != "image/png" ||
			len(got.Documents[0].SHA256) != 64 || got.Documents[0].UploadedBy != founderAEmail {
			t.Fatalf("upload answered %+v", got)
		}
		done := e.waitRun(t, run.ID, "succeeded")
		var out struct{ DocumentIDs []string }
		if err := json.Unmarshal(done.Output, &out); err != nil || len(out.DocumentIDs) != 2 || out.DocumentIDs[0] != got.Documents[0].ID {
			t.Fatalf("run output %s: want the two documents uploaded", done.Output)
		}

		// A late upload loses like any resume, and its files are not kept.
		problem(t, e.uploadAPI(t, s.ID, e.reviewer, file{"late.pdf", pdfBytes}), http.StatusConflict, domain.CodeAlreadyResumed)
		if docs, _ := e.db.Documents(t.Context(), s.ID); len(docs) != 2 {
			t.Fatalf("%d documents after a losing upload; want the winner's 2", len(docs))
		}
		uploads, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Action: "document.upload"})
		resumes, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Action: "suspension.resume"})
		if len(uploads) != 2 || len(resumes) != 1 || resumes[0].ActorEmail != founderAEmail {
			t.Fatalf("audit: %d uploads, %+v resumes; want 2 uploads and the founder's resume", len(uploads), resumes)
		}
	})
}
