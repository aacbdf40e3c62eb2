package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	htmltemplate "html/template"
	"net/url"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Message is one mail, ready to send: a plain-text and an HTML part of the
// same content.
type Message struct {
	To      string
	Subject string
	Text    string
	HTML    string
	// MessageID (without angle brackets) is stable for what the mail is
	// about and who gets it, so that a mail sent again after a crash is
	// recognisable as the same one.
	MessageID string
	Date      time.Time
	// Unsubscribe is the page where the recipient chooses which mail they
	// get (List-Unsubscribe); Link is the mail's main link.
	Unsubscribe string
	Link        string
}

// composer writes the mails of the jobs the dispatcher claims.
type composer struct {
	publicURL string
	host      string
	// prefix begins every subject (see SubjectPrefix).
	prefix string
}

func newComposer(publicURL, organisation string) composer {
	publicURL = strings.TrimRight(publicURL, "/")
	host := "tollgate.local"
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return composer{publicURL: publicURL, host: host, prefix: SubjectPrefix(organisation)}
}

// item is one request as a mail shows it.
type item struct {
	Reason string
	Title  string
	Fields []field
	Asked  string
	Link   string
	// Approve and Reject, when set, are the buttons that decide an
	// approval from the mail (see Dispatcher.buttons).
	Approve, Reject string
}

// buttons are the Approve and Reject links of a mail's approvals, by
// suspension id.
type buttons map[string][2]string

type field struct{ Label, Value string }

// mailData is what the templates see.
type mailData struct {
	Intro   string
	Items   []item
	Account string
	Why     string
}

// compose writes the mail of job, at now; ok is false when there is
// nothing left to tell: a request no longer pending, a digest of none.
func (c composer) compose(job domain.MailJob, now time.Time, btn buttons) (Message, bool, error) {
	m := Message{To: job.To.Email, Date: now, Unsubscribe: c.publicURL + "/account"}
	data := mailData{Account: m.Unsubscribe}
	switch job.Kind {
	case domain.MailKindMessage:
		return c.oneOff(job, m), true, nil
	case domain.MailKindDigest:
		if len(job.Digest) == 0 {
			return m, false, nil
		}
		for _, s := range job.Digest {
			data.Items = append(data.Items, c.item(s, btn))
		}
		m.Subject = c.prefix + plural(len(job.Digest), "request waits", "requests wait") + " for you"
		m.MessageID = "digest." + job.Day + "." + c.tag(job.To.ID) + "@" + c.host
		m.Link = c.publicURL + "/"
		data.Intro = "These requests were held for today's digest and are still waiting:"
		data.Why = "You get this digest because you may act on these requests."
	default:
		if job.Suspension.Status != domain.SuspensionPending {
			return m, false, nil // decided meanwhile (while the SMTP server was down, say)
		}
		it := c.item(*job.Suspension, btn)
		data.Items = []item{it}
		m.Subject, m.Link = c.prefix+it.Title, it.Link
		m.MessageID = "request." + job.Suspension.ID + "." + c.tag(job.To.ID) + "@" + c.host
		from := ""
		if job.AskedBy != "" {
			from = " from " + job.AskedBy
		}
		data.Intro = "A request" + from + " waits for you:"
		if job.Round > 0 {
			m.Subject = c.prefix + "Reminder: " + it.Title
			m.MessageID = "request." + job.Suspension.ID + ".r" + strconv.Itoa(job.Round) + "." + c.tag(job.To.ID) + "@" + c.host
			data.Intro = "A request" + from + " still waits for you:"
		}
		data.Why = "You get this mail because you may act on this request."
	}
	var text, html bytes.Buffer
	if err := textMail.Execute(&text, data); err != nil {
		return m, false, err
	}
	if err := htmlMail.Execute(&html, data); err != nil {
		return m, false, err
	}
	m.Text, m.HTML = text.String(), html.String()
	return m, true, nil
}

func (c composer) oneOff(job domain.MailJob, m Message) Message {
	msg := job.Message
	m.Subject, m.Text, m.HTML, m.Link = msg.Subject, msg.Text, msg.HTML, msg.Link
	key := msg.Key
	if key == "" {
		key = "message." + strconv.FormatInt(job.ID, 10)
	}
	m.MessageID = key + "@" + c.host
	return m
}

// tag is a short, stable stand-in for a user id in a Message-ID, which
// allows fewer characters than an id may have.
func (c composer) tag(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}

func (c composer) item(s domain.Suspension, btn buttons) item {
	it := item{Reason: s.ReasonName(), Title: s.Title, Asked: asked(s), Link: c.publicURL + "/suspensions/" + url.PathEscape(s.ID)}
	if b, ok := btn[s.ID]; ok {
		it.Approve, it.Reject = b[0], b[1]
	}
	if it.Title == "" {
		it.Title = it.Reason
	}
	if it.Title == "" {
		it.Title = "A request"
	}
	if it.Reason == it.Title {
		it.Reason = ""
	}
	for _, f := range s.Fields {
		it.Fields = append(it.Fields, field{Label: f.Label, Value: FormatField(f)})
	}
	return it
}

// asked is what the request asks of the person, in one sentence or two.
func asked(s domain.Suspension) string {
	if s.Instructions != "" {
		return s.Instructions
	}
	if s.Kind == domain.KindApproval {
		return "Approve or reject it."
	}
	if len(s.Accept) > 0 {
		return "Upload the documents it asks for (" + strings.Join(s.Accept, ", ") + ")."
	}
	return "Supply what it asks for."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

var textMail = texttemplate.Must(texttemplate.New("text").Parse(`{{.Intro}}
{{range .Items}}
{{.Title}}{{if .Reason}} ({{.Reason}}){{end}}
{{range .Fields}}  {{.Label}}: {{.Value}}
{{end}}  {{.Asked}}
{{if .Approve}}  Approve: {{.Approve}}
  Reject: {{.Reject}}
  (Each asks you to confirm before anything is decided; the two work once between them, for you alone.)
{{end}}  Open it: {{.Link}}
{{end}}
{{.Why}} Choose whether mail comes at once, in a daily digest or not at all on your account page: {{.Account}}
`))

var htmlMail = htmltemplate.Must(htmltemplate.New("html").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"></head>
<body style="font-family: system-ui, sans-serif; line-height: 1.5; color: #1f2328; max-width: 36rem">
<p>{{.Intro}}</p>
{{range .Items}}<div style="border: 1px solid #d0d7de; border-radius: 6px; padding: 0.75rem 1rem; margin: 0 0 1rem">
{{if .Reason}}<p style="margin: 0; color: #59636e; font-size: 0.875rem">{{.Reason}}</p>{{end}}
<h2 style="margin: 0 0 0.5rem; font-size: 1.125rem"><a href="{{.Link}}">{{.Title}}</a></h2>
{{if .Fields}}<table style="border-collapse: collapse; margin: 0 0 0.5rem">{{range .Fields}}
<tr><th style="text-align: left; font-weight: normal; color: #59636e; padding: 0 1rem 0 0">{{.Label}}</th><td>{{.Value}}</td></tr>{{end}}
</table>{{end}}
<p style="margin: 0 0 0.5rem">{{.Asked}}</p>
{{if .Approve}}<table role="presentation" style="border-collapse: separate; border-spacing: 0 0; margin: 0 0 0.75rem"><tr>
<td style="background: #1a7f37; border-radius: 6px"><a href="{{.Approve}}" style="display: inline-block; padding: 0.6rem 1.4rem; color: #ffffff; font-weight: 600; text-decoration: none">Approve</a></td>
<td style="width: 0.75rem"></td>
<td style="background: #ffffff; border: 1px solid #cf222e; border-radius: 6px"><a href="{{.Reject}}" style="display: inline-block; padding: 0.55rem 1.4rem; color: #cf222e; font-weight: 600; text-decoration: none">Reject</a></td>
</tr></table>
<p style="margin: 0 0 0.5rem; color: #59636e; font-size: 0.875rem">Each button asks you to confirm before anything is decided.</p>{{end}}
<p style="margin: 0"><a href="{{.Link}}" style="font-weight: 600">Open the request</a></p>
</div>
{{end}}<p style="color: #59636e; font-size: 0.875rem">{{.Why}} Choose whether mail comes at once, in a daily digest or not at all on <a href="{{.Account}}">your account page</a>.</p>
</body></html>
`))
