package flow

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Waitpoints creates waitpoints for steps and checks resume calls against
// them. A WEBHOOK waitpoint's resume URL carries a token derived from the
// server's secret (HMAC-SHA256 of the run and waitpoint ids, 256 bits): the
// same waitpoint always has the same URL, so a retried step hands out the
// URL it handed out before, and the API can show it again. Only the
// token's SHA-256 is stored; a call is checked against it in constant
// time.
type Waitpoints struct {
	*Links
	Store domain.WaitpointStore
	// MaxWait bounds a DELAY waitpoint (DefaultMaxWait).
	MaxWait time.Duration
	Clock   domain.Clock
}

// Links are what the URLs a server hands out are made of: its public
// address and the secret their tokens derive from.
type Links struct {
	// Secret derives tokens: resume URLs and async steps' receipt tokens,
	// derived again on each dispatch. Every server on one database must
	// use the same secret; serve keeps it in the database.
	Secret []byte
	// PublicURL is where callers reach this server (https://flows.example.com).
	PublicURL string
}

// WaitpointSpec is what a step asks for.
type WaitpointSpec struct {
	Type domain.WaitpointType
	// ResumeAt or Delay: when a DELAY waitpoint fires.
	ResumeAt time.Time
	Delay    time.Duration
	// ResponseToSend, for a WEBHOOK waitpoint of a run started by a
	// webhook, answers that webhook's call when the run pauses here. The
	// text {{resumeUrl}} in its body is replaced by the resume URL.
	ResponseToSend *domain.HTTPResponse
}

// Waitpoint is a created waitpoint as its step sees it.
type Waitpoint struct {
	ID   string
	Type domain.WaitpointType
	// ResumeURL resumes a WEBHOOK waitpoint with any HTTP call and
	// answers at once.
	ResumeURL string
	// SyncURL resumes it as ResumeURL does, and answers the call with
	// what the run does next (its output, the next waitpoint's response
	// to send, or 202 when it pauses otherwise or takes longer than the
	// server's sync timeout). It is ResumeURL with /sync after the
	// waitpoint's id, before the query that carries the token: appended to
	// ResumeURL, /sync would become part of the token.
	SyncURL  string
	ResumeAt *time.Time
}

// ResumeURLPlaceholder in a responseToSend body becomes the resume URL.
const ResumeURLPlaceholder = "{{resumeUrl}}"

func (w *Waitpoints) now() time.Time {
	if w.Clock != nil {
		return w.Clock.Now()
	}
	return domain.SystemClock{}.Now()
}

// CodeWaitpointTypeMismatch is the error code of a step execution that
// asks for a waitpoint of another type than the one it created: a step has
// one waitpoint, and asking again returns it only when the type is the
// same. As a task handler's error it fails the run at once, since every
// retry of the execution meets the first waitpoint again.
const CodeWaitpointTypeMismatch = "waitpoint_type_mismatch"

// create registers a step execution's waitpoint, idempotently: asking
// again for one of the same type returns the first, one of another type
// is an error.
func (w *Waitpoints) create(ctx context.Context, runID, step, execKey string, spec WaitpointSpec) (Waitpoint, error) {
	if w == nil || w.Store == nil {
		return Waitpoint{}, errors.New("this server does not offer waitpoints")
	}
	now := w.now()
	row := domain.Waitpoint{
		ID: newID(), RunID: runID, StepName: step, ExecutionKey: execKey,
		Type: spec.Type, ResponseToSend: spec.ResponseToSend, CreatedAt: now,
	}
	switch spec.Type {
	case domain.WaitpointDelay:
		at := spec.ResumeAt
		if at.IsZero() {
			at = now.Add(spec.Delay)
		}
		limit := longestWait(w.MaxWait)
		if at.Sub(now) > limit {
			return Waitpoint{}, &domain.ValidationError{Code: "wait_too_long", Message: fmt.Sprintf(
				"a waitpoint until %s is longer than this server's longest wait (%v)", at.UTC().Format(time.RFC3339), limit)}
		}
		at = at.UTC()
		row.ResumeAt = &at
		if spec.ResponseToSend != nil {
			return Waitpoint{}, &domain.ValidationError{Code: domain.CodeValidation, Message: "only a WEBHOOK waitpoint has a response to send"}
		}
	case domain.WaitpointWebhook:
		row.TokenHash = tokenHash(w.token(runID, row.ID))
	default:
		return Waitpoint{}, &domain.ValidationError{Code: domain.CodeValidation, Message: fmt.Sprintf("waitpoint type %q is not DELAY or WEBHOOK", spec.Type)}
	}
	got, err := w.Store.CreateWaitpoint(ctx, row)
	if err != nil {
		return Waitpoint{}, fmt.Errorf("create waitpoint: %w", err)
	}
	if got.Type != spec.Type {
		return Waitpoint{}, &domain.ValidationError{Code: CodeWaitpointTypeMismatch, Message: fmt.Sprintf(
			"this execution of step %s already waits on %s waitpoint %s; a step execution has one waitpoint, so it cannot also ask for a %s one",
			step, got.Type, got.ID, spec.Type)}
	}
	out := Waitpoint{ID: got.ID, Type: got.Type, ResumeAt: got.ResumeAt}
	if got.Type == domain.WaitpointWebhook {
		out.ResumeURL, out.SyncURL = w.ResumeURL(got.RunID, got.ID), w.SyncURL(got.RunID, got.ID)
	}
	return out, nil
}

// tokenHash is what is stored of a token the server hands out (a resume
// URL's, a work item's receipt): its SHA-256, so a copy of the database
// cannot act on a run.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// token is the secret part of a waitpoint's resume URL.
func (w *Waitpoints) token(runID, id string) string { return w.mac("waitpoint", runID, id) }

// mac derives a 256-bit token from the secret for a purpose and its ids.
func (l *Links) mac(purpose string, ids ...string) string {
	m := hmac.New(sha256.New, l.Secret)
	m.Write([]byte("tollgate-" + purpose))
	for _, id := range ids {
		m.Write([]byte("\x00" + id))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ResumeURL is the absolute URL that resumes a WEBHOOK waitpoint.
func (w *Waitpoints) ResumeURL(runID, id string) string {
	return w.url(waitpointPath(runID, id) + "?token=" + w.token(runID, id))
}

// SyncURL is the absolute URL that resumes a WEBHOOK waitpoint and
// answers with what the run does next (seed 000's …/sync).
func (w *Waitpoints) SyncURL(runID, id string) string {
	return w.url(waitpointPath(runID, id) + "/sync?token=" + w.token(runID, id))
}

func waitpointPath(runID, id string) string {
	return "/v1/flow-runs/" + url.PathEscape(runID) + "/waitpoints/" + url.PathEscape(id)
}

// url is the absolute URL of path on this server.
func (l *Links) url(path string) string { return strings.TrimRight(l.PublicURL, "/") + path }

// Check returns the WEBHOOK waitpoint a resume call names if its token is
// right. No such waitpoint, a DELAY one and a wrong token all give
// ErrNotFound, so a caller learns nothing from trying.
func (w *Waitpoints) Check(ctx context.Context, runID, id, token string) (domain.Waitpoint, error) {
	wp, err := w.Store.Waitpoint(ctx, runID, id)
	if err != nil {
		return domain.Waitpoint{}, err
	}
	if h := tokenHash(token); wp.Type != domain.WaitpointWebhook || subtle.ConstantTimeCompare(wp.TokenHash, h) != 1 {
		return domain.Waitpoint{}, domain.ErrNotFound
	}
	return wp, nil
}

// Response is the waitpoint's response to send with its resume URL in
// place of the placeholder, or nil.
func (w *Waitpoints) Response(wp domain.Waitpoint) *domain.HTTPResponse {
	if wp.ResponseToSend == nil {
		return nil
	}
	r := *wp.ResponseToSend
	if strings.Contains(string(r.Body), ResumeURLPlaceholder) {
		r.Body = []byte(strings.ReplaceAll(string(r.Body), ResumeURLPlaceholder, w.ResumeURL(wp.RunID, wp.ID)))
	}
	return &r
}

// waitFor is what a task handler returns to pause on a waitpoint.
type waitFor struct{ wp Waitpoint }

// WaitForWaitpoint pauses the task's step on wp, created by this
// execution: return it as the handler's result. The handler runs again
// when the waitpoint completes, with ExecutionType ExecutionResume and the
// ResumePayload.
func WaitForWaitpoint(wp Waitpoint) any { return waitFor{wp: wp} }

// Execution types of a task handler.
const (
	ExecutionBegin  = "BEGIN"
	ExecutionResume = "RESUME"
)
