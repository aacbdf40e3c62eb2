package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

// problemTypePrefix makes a stable problem type URI from an error code.
const problemTypePrefix = "urn:tollgate:problem:"

// Problem is an RFC 9457 problem details object, the body of every error
// response of the JSON API. Code is the stable domain error code clients
// branch on; Errors lists per-field problems; Extra's members appear at the
// top level of the object (for example resumedBy and resumedAt).
type Problem struct {
	Type     string
	Title    string
	Status   int
	Detail   string
	Code     string
	Instance string
	Errors   []domain.FieldError
	Extra    map[string]any
}

// problemMembers are the names Problem writes itself; Extra cannot replace them.
var problemMembers = map[string]bool{
	"type": true, "title": true, "status": true, "detail": true,
	"code": true, "instance": true, "errors": true,
}

// MarshalJSON writes the standard members in a fixed order, then Extra's
// members sorted by name. An Extra member named like a standard member is
// dropped, so detail data can never change the status or the type.
func (p Problem) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	add := func(name string, v any) error {
		val, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("marshal problem member %q: %w", name, err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
		return nil
	}
	for _, m := range p.members() {
		if err := add(m.name, m.value); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		if problemMembers[k] {
			continue
		}
		if err := add(k, p.Extra[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type problemMember struct {
	name  string
	value any
}

// members lists the standard members to write, leaving out empty optional ones.
func (p Problem) members() []problemMember {
	ms := []problemMember{{"type", p.Type}, {"title", p.Title}, {"status", p.Status}}
	if p.Detail != "" {
		ms = append(ms, problemMember{"detail", p.Detail})
	}
	if p.Code != "" {
		ms = append(ms, problemMember{"code", p.Code})
	}
	if p.Instance != "" {
		ms = append(ms, problemMember{"instance", p.Instance})
	}
	if len(p.Errors) > 0 {
		ms = append(ms, problemMember{"errors", p.Errors})
	}
	return ms
}

// NewProblem fills in the type and title that follow from status and code.
func NewProblem(status int, code, detail string) Problem {
	return Problem{
		Type:   problemTypePrefix + code,
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Code:   code,
	}
}

// NotApproverMessage refuses a person a suspension does not name, in the
// API and the web app alike.
const NotApproverMessage = "This suspension names who may act on it (its approvers, and admins), and you are not among them."

// ownRunMessage refuses a founder a decision in a run they started, in the
// API and the web app alike.
const ownRunMessage = "You started this run, so someone else must approve or reject it: nobody decides their own request."

// DutyMessage says why separation of duties refused a person: the
// approval's own reason, or that they started the run.
func DutyMessage(err error) string {
	if de, ok := errors.AsType[*domain.DutyError](err); ok {
		return de.Message
	}
	return ownRunMessage
}

// ProblemFor maps an error to the problem the client sees. A refused role
// or approver is a 403; only validation and conflict errors, which are
// written for clients, show their message; anything unexpected becomes a
// generic 500 whose error the caller logs.
func ProblemFor(err error) Problem {
	if se, ok := errors.AsType[*ScopeError](err); ok {
		return NewProblem(http.StatusForbidden, CodeKeyScope, se.Error())
	}
	if busy, ok := errors.AsType[*TooManyUploadsError](err); ok {
		return NewProblem(http.StatusTooManyRequests, CodeTooManyUploads, busy.Message)
	}
	switch {
	case databaseUnavailable(err):
		return NewProblem(http.StatusServiceUnavailable, CodeDatabaseUnavailable, "The database cannot be reached just now; nothing was changed. Try again in a moment.")
	case errors.Is(err, ErrForbidden):
		return NewProblem(http.StatusForbidden, "forbidden", "Your role does not allow this.")
	case errors.Is(err, ErrMethodNotAllowed):
		return NewProblem(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "This address does not take this method; the Allow header lists those it takes.")
	case errors.Is(err, domain.ErrNotApprover):
		return NewProblem(http.StatusForbidden, domain.CodeNotApprover, NotApproverMessage)
	case errors.Is(err, errTooManyInvalidTokens):
		return NewProblem(http.StatusTooManyRequests, CodeTooManyInvalidTokens, "This token matches nothing, and this address sent too many that match nothing; wait for the time Retry-After says, then try again.")
	case errors.Is(err, errTooManyStreams):
		return NewProblem(http.StatusTooManyRequests, CodeTooManyStreams, "You hold as many attach streams open as one user may; close one and try again.")
	case IsReadError(err):
		return NewProblem(http.StatusBadRequest, CodeUploadUnreadable, "The upload could not be read: the connection broke, or the body is not a multipart form. Send it again.")
	case errors.As(err, new(*TooManyWaitsError)):
		return NewProblem(http.StatusTooManyRequests, CodeTooManyWaits, "You hold as many waits for what runs do next as one caller may; wait for the time Retry-After says, or ask without ?wait=.")
	case errors.Is(err, domain.ErrSeparationOfDuties):
		return NewProblem(http.StatusForbidden, domain.CodeSeparationOfDuties, DutyMessage(err))
	case errors.Is(err, domain.ErrMachineWait):
		return NewProblem(http.StatusForbidden, domain.CodeMachineWait, "This request waits for a machine (a timer, a webhook, a signal or an async step), not for a person: that machine resumes it, or an admin by hand. Nothing was changed.")
	case errors.Is(err, domain.ErrStartForbidden):
		return NewProblem(http.StatusForbidden, domain.CodeStartForbidden, "Your role may not start runs of this workflow.")
	}
	if ve, ok := errors.AsType[*domain.ValidationError](err); ok {
		p := NewProblem(ValidationStatus(ve.Code), cmp.Or(ve.Code, domain.CodeValidation), ve.Message)
		p.Errors = ve.Fields
		return p
	}
	if se, ok := errors.AsType[*domain.WorkStateError](err); ok {
		// The seed's state-validation answer: 400, which endpoints treat as
		// final for the report's token.
		p := NewProblem(http.StatusBadRequest, se.Code, se.Message)
		p.Extra = map[string]any{"workItemId": se.Item.ID, "state": se.Item.State}
		if se.RunStatus != "" {
			p.Extra["runId"], p.Extra["runStatus"] = se.Item.RunID, se.RunStatus
		}
		return p
	}
	if ce, ok := errors.AsType[*domain.ConflictError](err); ok {
		status := http.StatusConflict
		if ce.Code == domain.CodeBranchNotTaken {
			status = http.StatusGone // the wait is gone for good
		}
		p := NewProblem(status, cmp.Or(ce.Code, domain.CodeConflict), ce.Message)
		p.Extra = maps.Clone(ce.Detail)
		return p
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return NewProblem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "The request body is too large.")
	}
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return NewProblem(http.StatusNotFound, domain.CodeNotFound, "The requested resource does not exist.")
	case errors.Is(err, domain.ErrConflict):
		return NewProblem(http.StatusConflict, domain.CodeConflict, "The resource is not in a state that allows this change.")
	}
	return NewProblem(http.StatusInternalServerError, "internal", "An internal error occurred.")
}

func ValidationStatus(code string) int {
	switch code {
	case domain.CodeInvalidJSON, CodeInvalidQuery:
		return http.StatusBadRequest
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnprocessableEntity
}

// WriteProblem writes p as application/problem+json, filling in a missing
// status (500), title, type and instance (the request path; r may be nil).
func WriteProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	p.Status = cmp.Or(p.Status, http.StatusInternalServerError)
	p.Title = cmp.Or(p.Title, http.StatusText(p.Status))
	if p.Type == "" {
		p.Type = "about:blank"
		if p.Code != "" {
			p.Type = problemTypePrefix + p.Code
		}
	}
	if p.Instance == "" && r != nil && r.URL != nil {
		p.Instance = r.URL.Path
	}
	if r != nil {
		if id := RequestID(r.Context()); id != "" {
			p.Extra = maps.Clone(p.Extra)
			if p.Extra == nil {
				p.Extra = map[string]any{}
			}
			p.Extra["requestId"] = id
		}
	}
	body, err := json.Marshal(p)
	if err != nil {
		// Extra held something encoding/json cannot write. The status and
		// code still tell the client what happened.
		p.Extra = nil
		body, _ = json.Marshal(p)
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n'))
}

// WriteJSON writes v as the JSON response body with the given status. If v
// cannot be encoded, the client gets a generic 500 problem instead.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		WriteProblem(w, nil, ProblemFor(err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// CodeDatabaseUnavailable is the problem code of a request the database
// could not answer for now (it restarts, or the connection was cut): 503
// with Retry-After. A write it interrupted did not commit.
const CodeDatabaseUnavailable = "database_unavailable"

// databaseUnavailable reports an error of a database that cannot answer
// for now: a connection refused or cut (SQLSTATE class 08, or no
// connection at all), or a server shutting down or starting up (57P01 to
// 57P03). The same request may be tried again.
func databaseUnavailable(err error) bool {
	if se, ok := errors.AsType[interface {
		error
		SQLState() string
	}](err); ok {
		c := se.SQLState()
		return strings.HasPrefix(c, "08") || c == "57P01" || c == "57P02" || c == "57P03"
	}
	_, ok := errors.AsType[*net.OpError](err)
	return ok
}

// CodeKeyScope is a request of an API key whose scopes do not include
// what it asks for (HTTP 403).
const CodeKeyScope = "key_scope"

// ScopeError refuses a scoped API key what its scopes do not include.
type ScopeError struct {
	Needed string
	Has    []string
}

func (e *ScopeError) Error() string {
	return "This API key is scoped to " + strings.Join(e.Has, ", ") + "; this needs the scope " + e.Needed + ". Nothing was done."
}
