package web

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// defaultMaxWaitsPerCaller caps the waits (?wait=) one caller holds at
// once: more than a program needs for its own runs, few enough that one
// key cannot hold a large share of the server's connections and reads.
const defaultMaxWaitsPerCaller = 100

// CodeTooManyWaits means the caller already holds as many waits for what
// runs do next as one caller may (HTTP 429, with a Retry-After).
const CodeTooManyWaits = "too_many_waits"

// TooManyWaitsError refuses a wait over its caller's cap; RetryAfter is
// how long until the first of the caller's waits ends.
type TooManyWaitsError struct{ RetryAfter time.Duration }

func (e *TooManyWaitsError) Error() string {
	return fmt.Sprintf("too many waits for this caller; one ends within %s", e.RetryAfter)
}

// RetryAfterSeconds is the Retry-After of the refusal: whole seconds,
// rounded up, at least one.
func (e *TooManyWaitsError) RetryAfterSeconds() int {
	return max(1, int((e.RetryAfter+time.Second-1)/time.Second))
}

// waitSlots counts the waits each caller holds, by the deadline of each.
type waitSlots struct {
	mu   sync.Mutex
	held map[string][]time.Time
}

// acquire takes one of caller's limit slots for a wait that ends by
// deadline; a limit of zero or less means no cap. It returns the function
// that gives the slot back, or, when all are taken, a *TooManyWaitsError
// saying when the first of them ends.
func (ws *waitSlots) acquire(caller string, limit int, now, deadline time.Time) (func(), error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	held := ws.held[caller]
	if limit > 0 && len(held) >= limit {
		return nil, &TooManyWaitsError{RetryAfter: slices.MinFunc(held, time.Time.Compare).Sub(now)}
	}
	if ws.held == nil {
		ws.held = map[string][]time.Time{}
	}
	ws.held[caller] = append(held, deadline)
	var once sync.Once
	return func() { once.Do(func() { ws.release(caller, deadline) }) }, nil
}

func (ws *waitSlots) release(caller string, deadline time.Time) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	held := ws.held[caller]
	if i := slices.IndexFunc(held, deadline.Equal); i >= 0 {
		held = slices.Delete(held, i, i+1)
	}
	if len(held) == 0 {
		delete(ws.held, caller)
		return
	}
	ws.held[caller] = held
}

// caller names who holds a wait: the API key it came with, else the
// signed-in person.
func (p Principal) caller() string {
	if p.Key.ID != "" {
		return "key:" + p.Key.ID
	}
	return "user:" + p.User.ID
}

// HoldWait takes a slot of p's for a wait until deadline (see
// MaxWaitsPerCaller).
func (s *Server) HoldWait(p Principal, deadline time.Time) (func(), error) {
	return s.waits.acquire(p.caller(), capOr(s.MaxWaitsPerCaller, defaultMaxWaitsPerCaller), time.Now(), deadline)
}
