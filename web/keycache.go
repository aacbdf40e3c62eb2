package web

import (
	"sync"
	"time"
)

// keyCache remembers, for a short time, whom a valid API key belongs to, so
// that a busy client costs the database one lookup per TTL instead of one
// per request. Only successful lookups are kept (random guesses cannot fill
// it), it is keyed by the key's hash (the secret itself is never held), and
// it is bounded: when full it starts over. A key revoked or a user disabled
// elsewhere stops working here within the TTL; Forget ends it at once in
// this process.
type keyCache struct {
	ttl time.Duration
	max int
	now func() time.Time // monotonic wall clock; TTLs are not domain time

	mu      sync.Mutex
	entries map[[32]byte]cachedKey
}

type cachedKey struct {
	p     Principal
	until time.Time
}

func newKeyCache(ttl time.Duration, max int) *keyCache {
	return &keyCache{ttl: ttl, max: max, now: time.Now, entries: map[[32]byte]cachedKey{}}
}

func (c *keyCache) get(hash []byte) (Principal, bool) {
	if c.ttl <= 0 || len(hash) != 32 {
		return Principal{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[[32]byte(hash)]
	if !ok {
		return Principal{}, false
	}
	if !c.now().Before(e.until) {
		delete(c.entries, [32]byte(hash))
		return Principal{}, false
	}
	return e.p, true
}

func (c *keyCache) put(hash []byte, p Principal) {
	if c.ttl <= 0 || len(hash) != 32 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		clear(c.entries)
	}
	c.entries[[32]byte(hash)] = cachedKey{p: p, until: c.now().Add(c.ttl)}
}

// forgetUser drops every cached key of a user (revoked, disabled, role
// changed).
func (c *keyCache) forgetUser(userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.entries {
		if e.p.User.ID == userID {
			delete(c.entries, h)
		}
	}
}
