package web

import (
	"sync"
	"time"
)

// loginLimiter slows password guessing without letting strangers lock an
// account's owner out. Failures count per address (addressLimit) and per
// origin: for a browser with the account's device cookie (knownDevice),
// per that browser; for every other browser, per account, all unknown
// browsers together (accountLimit). Guesses from anywhere thus throttle
// the account only for browsers it has never signed in from, and many
// addresses against one account are still limited. An origin or address
// that has failed its limit within window is refused until its oldest
// failure in the window ages out. It lives in this process; several
// servers each keep their own count, so an attacker gets at most that
// many times the allowance. A success clears its origin's failures.
type loginLimiter struct {
	mu           sync.Mutex
	window       time.Duration
	accountLimit int
	addressLimit int
	origins      map[string][]time.Time // by originKey
	addresses    map[string][]time.Time
}

const maxTrackedKeys = 100_000

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{window: 15 * time.Minute, accountLimit: 5, addressLimit: 20,
		origins: map[string][]time.Time{}, addresses: map[string][]time.Time{}}
}

// originKey is what failures on account from device (a knownDevice key,
// or "" for a browser the account has not signed in from) count against.
func originKey(account, device string) string {
	if device != "" {
		return device
	}
	return "account:" + account
}

// blocked returns how long a login to account from device and addr must
// wait, 0 if it may try now.
func (l *loginLimiter) blocked(account, device, addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.wait(l.origins, originKey(account, device), l.accountLimit, now), l.wait(l.addresses, addr, l.addressLimit, now))
}

func (l *loginLimiter) wait(m map[string][]time.Time, key string, limit int, now time.Time) time.Duration {
	recent := l.prune(m, key, now)
	if len(recent) < limit {
		return 0
	}
	return recent[len(recent)-limit].Add(l.window).Sub(now)
}

func (l *loginLimiter) prune(m map[string][]time.Time, key string, now time.Time) []time.Time {
	ts := m[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= l.window {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(m, key)
	} else {
		m[key] = ts
	}
	return ts
}

func (l *loginLimiter) failed(account, device, addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range []struct {
		m   map[string][]time.Time
		key string
	}{{l.origins, originKey(account, device)}, {l.addresses, addr}} {
		if len(e.m) >= maxTrackedKeys {
			clear(e.m) // bounded memory under a flood of distinct keys
		}
		ts := l.prune(e.m, e.key, now)
		e.m[e.key] = append(ts, now)
	}
}

// succeeded clears the failures of account from device only: the owner
// signing in from a known browser leaves strangers throttled.
func (l *loginLimiter) succeeded(account, device string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.origins, originKey(account, device))
}
