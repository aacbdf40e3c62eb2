// Package clocktest is a domain.Clock that tests move by hand. It lives
// apart from the conformance suite so that every layer's tests (domain,
// storage, web, cmd) can take it without importing the engine, and apart
// from domain so that production code never carries it.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a domain.Clock that stands still until the test sets or
// advances it. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New is a clock standing at now.
func New(now time.Time) *Clock { return &Clock{now: now} }

// Now implements domain.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t, forwards or backwards.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
