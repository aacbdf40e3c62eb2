package client

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/url"
	"time"
)

// File is one file to upload: its name, as the person would see it, and
// its content.
type File struct {
	Name    string
	Content io.Reader
}

// Document is an uploaded document.
type Document struct {
	ID          string    `json:"id"`
	Filename    string    `json:"filename"`
	ContentType string    `json:"contentType"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	UploadedBy  string    `json:"uploadedBy"`
	CreatedAt   time.Time `json:"createdAt"`
}

// Uploaded is what an upload did: the suspension it resumed, and the
// documents it stored.
type Uploaded struct {
	Suspension Suspension `json:"suspension"`
	Documents  []Document `json:"documents"`
}

// UploadDocuments uploads files to a suspension that asks for documents
// and resumes it with them, as its page does. The files are streamed as
// they are read. The server sniffs each file's type from its content and
// refuses the whole upload for one it does not accept (422), or one over
// its size limit (413).
func (c *Client) UploadDocuments(ctx context.Context, suspensionID string, files ...File) (Uploaded, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, f := range files {
			part, err := mw.CreateFormFile("files", f.Name)
			if err == nil {
				_, err = io.Copy(part, f.Content)
			}
			if err != nil {
				pw.CloseWithError(fmt.Errorf("upload %s: %w", f.Name, err))
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	var out Uploaded
	_, err := c.send(ctx, "POST", "/api/v1/suspensions/"+url.PathEscape(suspensionID)+"/documents", nil, pr, mw.FormDataContentType(), &out)
	pr.Close() // ends the writer if the answer came before the whole body went
	return out, err
}
