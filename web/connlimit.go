package web

import (
	"errors"
	"sync"
)

// Default caps on long-lived connections per user: enough for every tab
// and tool a person has open, few enough that one account (or one stolen
// key) cannot hold the server's goroutines and file descriptors.
const (
	defaultMaxSocketsPerUser = 32
	defaultMaxAttachPerUser  = 32
)

// CodeTooManyStreams means the caller already holds as many attach streams
// as one user may (HTTP 429).
const CodeTooManyStreams = "too_many_streams"

// errTooManyStreams is an attach stream over its user's cap.
var errTooManyStreams = errors.New("too many open streams for this user")

// connLimiter counts a kind of long-lived connection per user.
type connLimiter struct {
	mu   sync.Mutex
	open map[string]int
}

// acquire takes one of user's max slots, reporting false when all are
// taken. A max of zero or less means no cap. Every true must be followed
// by one release.
func (l *connLimiter) acquire(user string, max int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if max > 0 && l.open[user] >= max {
		return false
	}
	if l.open == nil {
		l.open = map[string]int{}
	}
	l.open[user]++
	return true
}

func (l *connLimiter) release(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[user]--; l.open[user] <= 0 {
		delete(l.open, user)
	}
}

// capOr is a configured cap, or def when it is unset (0); a negative cap
// means none.
func capOr(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// HoldAttach takes one of the attach streams a user may hold open at once
// (MaxAttachPerUser); release gives it back. Beyond the cap it is
// errTooManyStreams.
func (s *Server) HoldAttach(userID string) (release func(), err error) {
	if !s.attaches.acquire(userID, capOr(s.MaxAttachPerUser, defaultMaxAttachPerUser)) {
		return nil, errTooManyStreams
	}
	return func() { s.attaches.release(userID) }, nil
}
