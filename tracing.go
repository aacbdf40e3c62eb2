package tollgate

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// runTracer traces the engine with a TracerProvider (Config.TracerProvider):
// a span per step a worker runs and per transition it commits, named
// "step NAME" and "transition KIND", with the run and workflow as
// attributes.
//
// Every span of a run is in the run's own trace, whose id is the run's id
// (a UUID is 16 bytes, as a trace id is): its steps, run by any worker of
// any server, hours apart, are one trace. The span that starts a run in a
// request (or resumes it) links to that request's span, so a trace
// viewer leads from the request to the run and back.
//
// A refusal (a conflict, a validation error, something not found) is an
// answer, not a failure: its span is not marked as an error, and says
// its code in tollgate.refused.
type runTracer struct{ tracer trace.Tracer }

func newRunTracer(tp trace.TracerProvider) runTracer {
	return runTracer{tracer: tp.Tracer("github.com/tollgatehq/tollgate")}
}

// span is engine.Opts.Trace.
func (rt runTracer) span(ctx context.Context, name string, attrs map[string]string) (context.Context, func(error)) {
	kv := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		kv = append(kv, attribute.String(k, v))
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(kv...)}
	if id, ok := runTraceID(attrs["run_id"]); ok {
		from := trace.SpanContextFromContext(ctx)
		if from.TraceID() != id {
			if from.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: from}))
			}
			ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: id, SpanID: runSpanID(id), TraceFlags: trace.FlagsSampled, Remote: true}))
		}
	}
	ctx, s := rt.tracer.Start(ctx, name, opts...)
	return ctx, func(err error) {
		switch code, refused := refusal(err); {
		case refused:
			s.SetAttributes(attribute.String("tollgate.refused", code))
		case err != nil:
			s.RecordError(err)
			s.SetStatus(codes.Error, err.Error())
		}
		s.End()
	}
}

// runTraceID is the trace of the run with this id; none when the id is
// not a UUID (a run's id always is).
func runTraceID(runID string) (trace.TraceID, bool) {
	u, err := uuid.Parse(runID)
	if err != nil {
		return trace.TraceID{}, false
	}
	id := trace.TraceID(u)
	return id, id.IsValid()
}

// runSpanID is the span a run's trace hangs from: derived from the trace
// id, so that every server names the same one; never exported.
func runSpanID(id trace.TraceID) trace.SpanID {
	var s trace.SpanID
	binary.BigEndian.PutUint64(s[:], binary.BigEndian.Uint64(id[8:])|1)
	return s
}

// refusal says whether err refuses what was asked, rather than failing
// at it, and with which code: what the API would answer with a 4xx, and
// a commit of a claim another server has taken over.
func refusal(err error) (string, bool) {
	switch {
	case err == nil:
		return "", false
	case errors.Is(err, domain.ErrStale):
		return "stale", true
	}
	p := web.ProblemFor(err)
	return p.Code, p.Status < http.StatusInternalServerError
}
