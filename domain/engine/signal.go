package engine

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tollgatehq/tollgate/domain"
)

// MaxSignalIDLen bounds a signal id.
const MaxSignalIDLen = 200

// Signal delivers a signal to a run (see domain.SignalRequest). The request
// is checked whole first; an invalid one is a *domain.ValidationError
// listing every problem, and changes nothing.
func (e *Engine) Signal(ctx context.Context, req domain.SignalRequest) (domain.Signal, error) {
	if err := checkSignal(req); err != nil {
		return domain.Signal{}, err
	}
	req.Now = e.o.Clock.Now()
	req.Handoff = e.handoff()
	a := e.apply(ctx, domain.Transition{Signal: &req})
	e.dispatch(req.Handoff, a.Err)
	return a.Signal, a.Err
}

func checkSignal(req domain.SignalRequest) error {
	var errs []domain.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, domain.FieldError{Field: "/" + field, Message: fmt.Sprintf(format, args...)})
	}
	if err := domain.ValidateName("signal", req.Name); err != nil {
		add("name", "%v", err)
	} else if strings.HasPrefix(req.Name, "__") {
		// Replay's own waits (__timer) are not for senders to resolve.
		add("name", "names starting with __ are reserved")
	}
	switch {
	case req.SignalID == "":
		add("signalId", "is required: it identifies the delivery, so that a repeat is recognised")
	case len(req.SignalID) > MaxSignalIDLen:
		add("signalId", "is %d bytes long; at most %d are allowed", len(req.SignalID), MaxSignalIDLen)
	case !utf8.ValidString(req.SignalID) || strings.ContainsFunc(req.SignalID, unicode.IsControl):
		add("signalId", "must be UTF-8 text without control characters")
	}
	if req.StepKey != "" {
		name, _, _ := strings.Cut(req.StepKey, "#")
		if err := domain.ValidateName("step", name); err != nil {
			add("stepId", "%v", err)
		}
	}
	if len(req.Payload) > 0 {
		if err := domain.CheckJSON(req.Payload); err != nil {
			add("payload", "%v", err)
		}
	}
	if len(errs) > 0 {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "invalid signal", Fields: errs}
	}
	return nil
}
