// The SMTP server of the mail tests runs a real SMTP server in the test process
// (emersion/go-smtp on 127.0.0.1) that keeps every message it accepts, and
// can be told to refuse them or to hold them unanswered.
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// receivedMail is one message the server accepted.
type receivedMail struct {
	From   string
	To     []string
	Header netmail.Header
	// Text and HTML are the decoded parts of a multipart/alternative
	// message (or Text alone for a single part).
	Text, HTML string
	Raw        []byte
	// TLS is whether the message came over an encrypted connection.
	TLS bool
	// Body and UTF8 are the BODY and SMTPUTF8 parameters of its MAIL.
	Body smtp.BodyType
	UTF8 bool
	// parsed is set once Header, Text and HTML are read from Raw (on
	// the first Messages, so that accepting mail stays as cheap as a
	// real server's elsewhere: the bench measures what sending costs).
	parsed bool
}

// smtpServer is the SMTP server; URL is smtp://127.0.0.1:<port>.
type smtpServer struct {
	URL string

	mu      sync.Mutex
	msgs    []receivedMail
	refuse  bool
	refused map[string]bool // recipients RCPT refuses
	hold    chan struct{}   // while set, DATA waits on it
	holding chan struct{}   // signalled when a DATA starts waiting
	arrived chan struct{}
}

// Start starts a server for the test; it stops when the test ends.
func startSMTPServer(t testing.TB) *smtpServer { return startSMTPServerWith(t, smtpOpts{}) }

// smtpOpts are how a test's SMTP server differs from the plain one.
type smtpOpts struct {
	// NoPipelining hides the PIPELINING the server offers, like some
	// relays.
	NoPipelining bool
	// TLS, when set, is the server's certificate: offered with STARTTLS,
	// or from the start with Implicit (smtps://).
	TLS      *tls.Config
	Implicit bool
	// SMTPUTF8 offers SMTPUTF8 (RFC 6531): addresses beyond ASCII.
	SMTPUTF8 bool
}

// startSMTPServerWith starts a server as o says.
func startSMTPServerWith(t testing.TB, o smtpOpts) *smtpServer {
	t.Helper()
	s := &smtpServer{arrived: make(chan struct{}, 1), holding: make(chan struct{}, 16)}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, conn: c}, nil }))
	srv.Domain = "127.0.0.1"
	srv.AllowInsecureAuth = true
	srv.EnableSMTPUTF8 = o.SMTPUTF8
	srv.ReadTimeout, srv.WriteTimeout = 30*time.Second, 30*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.URL = "smtp://" + ln.Addr().String()
	switch {
	case o.TLS != nil && o.Implicit:
		s.URL = "smtps://" + ln.Addr().String()
		ln = tls.NewListener(ln, o.TLS)
	case o.TLS != nil:
		srv.TLSConfig = o.TLS
	}
	if o.NoPipelining {
		ln = unpipelined{ln}
	}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() {
		s.Release()
		srv.Close()
	})
	return s
}

// testSender is a sender through the SMTP server at url, from Tollgate.
func testSender(t testing.TB, url string) *smtpSender {
	t.Helper()
	s, err := newSMTP(url, "Tollgate <tollgate@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Refuse makes the server refuse (true) or accept (false) every message.
func (s *smtpServer) Refuse(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = refuse
}

// RefuseRecipient makes RCPT refuse addr, as for a mailbox that does not
// exist.
func (s *smtpServer) RefuseRecipient(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = map[string]bool{}
	}
	s.refused[addr] = true
}

// Hold makes every DATA wait, unanswered, until Release: a sender caught
// in the middle of a send.
func (s *smtpServer) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold == nil {
		s.hold = make(chan struct{})
	}
}

// Holding is signalled each time a DATA starts waiting (see Hold).
func (s *smtpServer) Holding() <-chan struct{} { return s.holding }

// Release ends Hold; waiting DATA commands fail, as if the connection had
// been lost, and nothing they carried is kept.
func (s *smtpServer) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		close(s.hold)
		s.hold = nil
	}
}

// Messages returns the messages accepted so far. One that is not a
// well-formed MIME message panics: the sender wrote something mail
// clients cannot read.
func (s *smtpServer) Messages() []receivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.msgs {
		if m := &s.msgs[i]; !m.parsed {
			p, err := parse(m.Raw)
			if err != nil {
				panic(fmt.Sprintf("mail %d to %v is not a well-formed message: %v\n%s", i, m.To, err, m.Raw))
			}
			p.From, p.To, p.TLS, p.Body, p.UTF8, p.parsed = m.From, m.To, m.TLS, m.Body, m.UTF8, true
			*m = p
		}
	}
	return append([]receivedMail(nil), s.msgs...)
}

// count is how many messages were accepted.
func (s *smtpServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// To returns the messages accepted for addr.
func (s *smtpServer) To(addr string) []receivedMail {
	var out []receivedMail
	for _, m := range s.Messages() {
		for _, to := range m.To {
			if strings.EqualFold(to, addr) {
				out = append(out, m)
			}
		}
	}
	return out
}

// Wait waits until n messages were accepted, and returns them; it fails
// the test after d.
func (s *smtpServer) Wait(t testing.TB, n int, d time.Duration) []receivedMail {
	t.Helper()
	deadline := time.After(d)
	for {
		if s.count() >= n {
			return s.Messages()
		}
		select {
		case <-s.arrived:
		case <-deadline:
			t.Fatalf("%d mails arrived within %v, want %d: %+v", len(s.Messages()), d, n, s.Messages())
		}
	}
}

type session struct {
	s    *smtpServer
	conn *smtp.Conn
	from string
	opts smtp.MailOptions
	to   []string
}

func (ss *session) Reset()        { ss.from, ss.opts, ss.to = "", smtp.MailOptions{}, nil }
func (ss *session) Logout() error { return nil }

// Mail refuses a MAIL inside a mail transaction, as Postfix does: a
// client must end a refused message's transaction with RSET.
func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	if ss.from != "" {
		return &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "nested MAIL command"}
	}
	ss.from = from
	if opts != nil {
		ss.opts = *opts
	}
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.s.mu.Lock()
	refused := ss.s.refused[to]
	ss.s.mu.Unlock()
	if refused {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.s.mu.Lock()
	hold, refuse := ss.s.hold, ss.s.refuse
	ss.s.mu.Unlock()
	if hold != nil {
		select {
		case ss.s.holding <- struct{}{}:
		default:
		}
		<-hold
		return errors.New("released")
	}
	if refuse {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	_, encrypted := ss.conn.TLSConnectionState()
	m := receivedMail{From: ss.from, To: ss.to, Raw: raw, TLS: encrypted, Body: ss.opts.Body, UTF8: ss.opts.UTF8}
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, m)
	ss.s.mu.Unlock()
	select {
	case ss.s.arrived <- struct{}{}:
	default:
	}
	return nil
}

// parse reads a message and its text and HTML parts.
func parse(raw []byte) (receivedMail, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return receivedMail{}, err
	}
	r := receivedMail{Header: msg.Header, Raw: raw}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return r, err
	}
	if !strings.HasPrefix(mt, "multipart/") {
		b, err := decode(msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
		r.Text = b
		return r, err
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		b, err := decode(p.Header.Get("Content-Transfer-Encoding"), p)
		if err != nil {
			return r, err
		}
		switch pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); pt {
		case "text/plain":
			r.Text = b
		case "text/html":
			r.HTML = b
		}
	}
}

// decode undoes a part's transfer encoding.
func decode(encoding string, r io.Reader) (string, error) {
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, err := io.ReadAll(r)
	return string(b), err
}

// unpipelined is a listener whose connections hide the PIPELINING the
// server offers in its EHLO reply.
type unpipelined struct{ net.Listener }

func (l unpipelined) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return unpipelinedConn{c}, nil
}

type unpipelinedConn struct{ net.Conn }

func (c unpipelinedConn) Write(p []byte) (int, error) {
	return c.Conn.Write(bytes.ReplaceAll(p, []byte("PIPELINING"), []byte("XNOTHING01")))
}
