package views

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// What a founder reads about their requests: the words for what is asked,
// where a request stands and when it is due, built from the suspension
// alone, so My requests and the request page say the same thing.

// RequestState is where a request stands, in a founder's words, with the
// class that colours its badge.
type RequestState struct {
	Label string
	Class string
}

// Request states.
var (
	StateWaiting   = RequestState{"Waiting for you", "state-waiting"}
	StateDone      = RequestState{"Done", "state-done"}
	StateExpired   = RequestState{"Expired", "state-expired"}
	StateCancelled = RequestState{"Cancelled", "state-cancelled"}
)

// StateOf says where s stands. A request whose deadline passed is resumed
// by the timer: for the founder it expired.
func StateOf(s domain.Suspension) RequestState {
	switch {
	case s.Status == domain.SuspensionPending:
		return StateWaiting
	case s.Status == domain.SuspensionExpired, s.Status == domain.SuspensionResumed && s.ResumedBy == "timer":
		return StateExpired
	case s.Status == domain.SuspensionCancelled:
		return StateCancelled
	}
	return StateDone
}

// RequestTitle is the line a founder knows a request by: its title, or
// the name of its reason when its author gave none.
func RequestTitle(s domain.Suspension) string {
	return cmp.Or(strings.TrimSpace(s.Title), s.ReasonName(), "Request")
}

// Deadline is when a request stops waiting: the wake-up of any suspension
// but a timer, nil when it has none.
func Deadline(s domain.Suspension) *time.Time {
	if s.Kind == domain.KindDelay {
		return nil
	}
	return s.WakeAt
}

// AskedOf says in a few words what a request asks for: "Upload: PDF or PNG
// image, up to 20 MB each", "Fill in a form", "Approve or reject". limit
// is the largest file accepted, 0 when unknown.
func AskedOf(s domain.Suspension, limit int64) string {
	switch {
	case len(s.Accept) > 0:
		return "Upload: " + uploadHint(s, limit)
	case s.Kind == domain.KindApproval:
		return "Approve or reject"
	case len(s.ResumeSchema) > 0:
		return "Fill in a form"
	}
	return "Send an answer"
}

// uploadHint names the files a request accepts and how large each may be:
// "PDF or PNG image, up to 20 MB each".
func uploadHint(s domain.Suspension, limit int64) string {
	hint := FileTypes(s.Accept)
	if limit > 0 {
		hint += ", up to " + Size(limit) + " each"
	}
	return hint
}

// AskSentence says what to do in one sentence: the author's instructions
// when given, else one built from what is asked.
func AskSentence(s domain.Suspension) string {
	if in := strings.TrimSpace(s.Instructions); in != "" {
		return in
	}
	switch {
	case len(s.Accept) > 0:
		return "Upload " + WithArticle(FileTypes(s.Accept)) + "."
	case s.Kind == domain.KindApproval:
		return "Read the details below, then approve or reject."
	case len(s.ResumeSchema) > 0:
		return "Fill in the form below and send it."
	}
	return "Write your answer below and send it."
}

// typeWord is how people name files of one MIME type.
var typeWord = map[string]string{
	"application/pdf":          "PDF",
	"image/*":                  "image",
	"image/png":                "PNG image",
	"image/jpeg":               "JPEG image",
	"image/gif":                "GIF image",
	"image/webp":               "WebP image",
	"image/bmp":                "BMP image",
	"text/*":                   "text file",
	"text/plain":               "text file",
	"text/csv":                 "CSV file",
	"application/zip":          "ZIP archive",
	"application/json":         "JSON file",
	"application/msword":       "Word document",
	"application/vnd.ms-excel": "Excel spreadsheet",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": "Word document",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":       "Excel spreadsheet",
	"audio/*": "audio file",
	"video/*": "video",
}

// FileTypes names accepted MIME types in words: "PDF or PNG image". A type
// without a name is shown as it is.
func FileTypes(types []string) string {
	var names []string
	for _, t := range types {
		n, ok := typeWord[strings.ToLower(t)]
		if !ok {
			n = t
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return joinWords(names, "or")
}

// joinWords lists words the way a sentence does: "a, b or c".
func joinWords(words []string, conj string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// WithArticle puts "a" or "an" before a thing's name, by its sound:
// "an image", "a PDF", "an MP4 video".
func WithArticle(name string) string {
	if name == "" {
		return name
	}
	first, _, _ := strings.Cut(name, " ")
	an := strings.ContainsAny(first[:1], "aeiouAEIOU")
	if first == strings.ToUpper(first) && len(first) > 1 { // an acronym, read letter by letter
		an = strings.ContainsAny(first[:1], "AEFHILMNORSX")
	}
	if an {
		return "an " + name
	}
	return "a " + name
}

// Size is a size as people say it, a limit or a file's: "20 MB", "4 KB",
// "1.5 MB", with no decimals for a round number. Pages and the refusals
// of uploads say sizes with it, so a limit reads the same in both.
func Size(n int64) string {
	unit, div := "bytes", int64(1)
	switch {
	case n >= 1<<20:
		unit, div = "MB", 1<<20
	case n >= 1<<10:
		unit, div = "KB", 1<<10
	}
	if n%div == 0 {
		return strconv.FormatInt(n/div, 10) + " " + unit
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + unit
}

// Until says how far ahead t is, in words and rounded to the nearest
// unit: "in 3 days"; a time already past reads like Ago.
func Until(now, t time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= 0:
		return Ago(now, t)
	case d < time.Minute:
		return "in a moment"
	case d < time.Hour:
		return "in " + plural(int(d.Round(time.Minute)/time.Minute), "minute")
	case d < 47*time.Hour+30*time.Minute:
		return "in " + plural(int(d.Round(time.Hour)/time.Hour), "hour")
	}
	return "in " + plural(int((d+12*time.Hour)/(24*time.Hour)), "day")
}

// exactTime is the full time, in UTC, for a tooltip; the page's script
// replaces it with the viewer's own zone.
func exactTime(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") }

// dayOf is the date alone: "2 Mar 2026".
func dayOf(t time.Time) string { return t.UTC().Format("2 Jan 2006") }

// fileNames lists the names of documents: "contract.pdf and scan.png".
func fileNames(docs []domain.Document) string {
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.Filename
	}
	return joinWords(names, "and")
}

// fileKind names one stored document's type in words, for its line in a
// list: "PDF", "PNG image".
func fileKind(contentType string) string {
	if n, ok := typeWord[contentType]; ok {
		return n
	}
	return contentType
}

// founderView is what FounderRequest shows of a SuspensionPage.
type founderView struct{ p SuspensionPage }

// mine reports whether the viewer is the one who answered the request.
func (f founderView) mine() bool {
	return f.p.Viewer != nil && f.p.S.ResumedAt != nil && strings.EqualFold(f.p.S.ResumedBy, f.p.Viewer.Email)
}

// justSent reports whether the page follows the viewer's own answer (the
// redirect after it carries a notice).
func (f founderView) justSent() bool {
	return f.p.Notice != "" && StateOf(f.p.S) == StateDone && f.mine()
}

// thanks says what was received and what happens next.
func (f founderView) thanks() string {
	const next = "; you will get an email if anything else is needed."
	switch {
	case len(f.p.Documents) == 1:
		return "Thanks — we received " + fileNames(f.p.Documents) + ". The team will review it" + next
	case len(f.p.Documents) > 1:
		return "Thanks — we received " + fileNames(f.p.Documents) + ". The team will review them" + next
	case f.p.S.Decision == domain.DecisionApproved:
		return "Thanks — your approval is recorded. The team has been told; you will get an email if anything else is needed."
	case f.p.S.Decision == domain.DecisionRejected:
		return "Thanks — your rejection is recorded. The team has been told; you will get an email if anything else is needed."
	}
	return "Thanks — we received your answer. The team will review it" + next
}

// outcome says, after the fact, how the request ended.
func (f founderView) outcome() string {
	s := f.p.S
	switch StateOf(s) {
	case StateExpired:
		return "The time for this request ran out. If you still need to send something, contact the team who asked."
	case StateCancelled:
		return "This request was withdrawn. Nothing more is needed from you."
	case StateDone:
		if !f.mine() {
			return "The team completed this request. Nothing more is needed from you."
		}
		switch s.Decision {
		case domain.DecisionApproved:
			return "You approved this request. Nothing more is needed from you."
		case domain.DecisionRejected:
			return "You rejected this request. Nothing more is needed from you."
		}
		return "You answered this request. Nothing more is needed from you."
	}
	return ""
}

// uploadFailed reports whether the page shows a refused upload, whose
// message belongs next to the file input.
func (f founderView) uploadFailed() bool {
	return f.p.Failure != "" && len(f.p.S.Accept) > 0 && f.p.Pending() && f.p.CanAct && len(f.formErrors()) == 0
}

// formErrors are the messages of a refused form's fields that the page
// shows no form for (a request that asks for files), so they are listed
// with the failure instead.
func (f founderView) formErrors() []string {
	if len(f.p.S.Accept) == 0 {
		return nil
	}
	errs := fieldErrors(f.p.FormFields)
	for _, fe := range f.p.FieldErrors {
		if fe.File == "" { // a place in the form's data, not an upload's file
			errs = append(errs, fe.Message)
		}
	}
	return errs
}

func fieldErrors(fields []FormField) []string {
	var out []string
	for _, fd := range fields {
		if fd.Error != "" {
			out = append(out, fd.Label+": "+fd.Error)
		}
		out = append(out, fieldErrors(fd.Fields)...)
	}
	return out
}

// RunLabel names a run for people: "A run of onboarding started 2 Mar
// 2026, 09:30 UTC".
func RunLabel(run domain.Run) string {
	return "A run of " + cmp.Or(run.WorkflowID, "a workflow") + " started " + exactTime(run.CreatedAt)
}
