package web

import (
	"sync"
	"time"
)

// loginLimiter slows password guessing without letting strangers lock an
// account's owner out. Failures count per origin: for a browser with the
// account's device cookie (knownDevice), per that browser alone; for
// every other browser, per account, all unknown browsers together
// (accountLimit), and per address (addressLimit). Guesses from anywhere
// thus throttle the account only for browsers it has never signed in
// from, and guesses from one address throttle that address only for such
// browsers too: behind a proxy or a NAT everyone shares one address, and
// a known browser's owner is not locked out by a stranger beside them.
// Passwords, unlike tokens, are few enough to guess, so a throttled
// origin is not checked at all (a right password is refused too). An
// origin or address that has failed its limit within window is refused
// until its oldest failure in the window ages out. It lives in this
// process; several servers each keep their own count, so an attacker gets
// at most that many times the allowance. A success clears its origin's
// failures.
type loginLimiter struct {
	mu           sync.Mutex
	window       time.Duration
	accountLimit int
	addressLimit int
	origins      failureLog // by originKey
	addresses    failureLog
}

const maxTrackedKeys = 100_000

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{window: 15 * time.Minute, accountLimit: 5, addressLimit: 20, origins: failureLog{}, addresses: failureLog{}}
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
// wait, 0 if it may try now. A known device is held to its own failures.
func (l *loginLimiter) blocked(account, device, addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	wait := l.origins.wait(originKey(account, device), l.accountLimit, l.window, now)
	if device != "" {
		return wait
	}
	return max(wait, l.addresses.wait(addr, l.addressLimit, l.window, now))
}

// failed counts a failure against its origin, and against its address
// unless it came from a known device.
func (l *loginLimiter) failed(account, device, addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.origins.add(originKey(account, device), l.window, now)
	if device == "" {
		l.addresses.add(addr, l.window, now)
	}
}

// succeeded clears the failures of account from device only: the owner
// signing in from a known browser leaves strangers throttled.
func (l *loginLimiter) succeeded(account, device string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.origins, originKey(account, device))
}

// failureLog holds the times of each key's recent failures, oldest first.
// Its users lock around it.
type failureLog map[string][]time.Time

// wait returns how long key must wait when limit failures are allowed per
// window, 0 if it may try now.
func (f failureLog) wait(key string, limit int, window time.Duration, now time.Time) time.Duration {
	recent := f.prune(key, window, now)
	if len(recent) < limit {
		return 0
	}
	return recent[len(recent)-limit].Add(window).Sub(now)
}

func (f failureLog) prune(key string, window time.Duration, now time.Time) []time.Time {
	ts := f[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= window {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(f, key)
	} else {
		f[key] = ts
	}
	return ts
}

func (f failureLog) add(key string, window time.Duration, now time.Time) {
	if len(f) >= maxTrackedKeys {
		clear(f) // bounded memory under a flood of distinct keys
	}
	f[key] = append(f.prune(key, window, now), now)
}
