package web

import (
	"io"
	"net/http"
	"time"
)

// A document transfer may outlast the server's read and write timeouts,
// which are sized for ordinary requests: a 100 MiB upload over a slow link
// takes minutes. While a transfer makes progress its connection's deadline
// moves forward, transferIdle at a time, so that a client that stops
// sending or reading is still cut off; an upload is cut off after
// uploadMaxDuration however it progresses (its staged files are swept
// later).
const (
	transferIdle      = time.Minute
	uploadMaxDuration = 30 * time.Minute
)

// progressDeadline moves a connection's read or write deadline forward as
// a transfer progresses, at most once a second.
type progressDeadline struct {
	rc    *http.ResponseController
	write bool
	end   time.Time // zero: no end
	last  time.Time
}

func (p *progressDeadline) extend() {
	now := time.Now()
	if now.Sub(p.last) < time.Second {
		return
	}
	p.last = now
	d := now.Add(transferIdle)
	if !p.end.IsZero() && d.After(p.end) {
		d = p.end
	}
	// Errors mean the connection cannot take deadlines (HTTP/2 streams in
	// some set-ups, test recorders); the server's own timeouts then apply.
	if p.write {
		_ = p.rc.SetWriteDeadline(d)
	} else {
		_ = p.rc.SetReadDeadline(d)
	}
}

// UploadDeadlines gives an upload request until uploadMaxDuration to
// arrive (read deadlines moving with its progress, through the returned
// reader) and to be answered.
func UploadDeadlines(w http.ResponseWriter, body io.ReadCloser) io.ReadCloser {
	rc := http.NewResponseController(w)
	end := time.Now().Add(uploadMaxDuration)
	_ = rc.SetWriteDeadline(end.Add(transferIdle))
	p := &progressDeadline{rc: rc, end: end}
	p.extend()
	return &progressReader{ReadCloser: body, p: p}
}

type progressReader struct {
	io.ReadCloser
	p *progressDeadline
}

func (r *progressReader) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	if n > 0 {
		r.p.extend()
	}
	return n, err
}

// progressWriter moves w's write deadline forward before each write.
type progressWriter struct {
	w io.Writer
	p *progressDeadline
}

func NewProgressWriter(w http.ResponseWriter) *progressWriter {
	return &progressWriter{w: w, p: &progressDeadline{rc: http.NewResponseController(w), write: true}}
}

func (pw *progressWriter) Write(b []byte) (int, error) {
	pw.p.extend()
	return pw.w.Write(b)
}
