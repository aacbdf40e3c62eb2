package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// Every request has an id: the X-Request-Id a proxy or client sent, when
// it is a plain token, or a new random one. It is answered in X-Request-Id,
// written in every log line the request leads to (request_id) and in every
// problem (requestId), so an operator finds a client's failure in the log.
// The time the request arrived travels with its id: bounds a caller asks
// for, such as ?wait=, count from it.

type requestIDKey struct{}

// requestMark is what withRequestID gives every request.
type requestMark struct {
	id      string
	arrived time.Time
}

// RequestID is the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	m, _ := ctx.Value(requestIDKey{}).(requestMark)
	return m.id
}

// arrivedAt is when the request ctx belongs to arrived, or now for a
// context of none.
func arrivedAt(ctx context.Context) time.Time {
	if m, ok := ctx.Value(requestIDKey{}).(requestMark); ok {
		return m.arrived
	}
	return time.Now()
}

// maxRequestID bounds an id taken from a request.
const maxRequestID = 64

// usableRequestID reports whether a given id can be logged and echoed as
// it is: 1 to 64 letters, digits, dots, dashes and underscores.
func usableRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !usableRequestID(id) {
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, requestMark{id: id, arrived: arrived})))
	})
}

// requestIDs adds the request's id to every record logged with its
// context.
type requestIDs struct{ slog.Handler }

func (h requestIDs) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(attrs)}
}

func (h requestIDs) WithGroup(name string) slog.Handler { return requestIDs{h.Handler.WithGroup(name)} }
