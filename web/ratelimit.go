package web

import (
	"sync"
	"time"
)

// loginLimiter slows password guessing: an account that has failed
// accountLimit times within window, or an address that has failed
// addressLimit times, is refused until its oldest failure in the window
// ages out. It lives in this process; several servers behind one address
// each keep their own count, so an attacker gets at most that many times
// the allowance. A success clears the account's failures.
type loginLimiter struct {
	mu           sync.Mutex
	window       time.Duration
	accountLimit int
	addressLimit int
	accounts     map[string][]time.Time
	addresses    map[string][]time.Time
}

const maxTrackedKeys = 100_000

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{window: 15 * time.Minute, accountLimit: 5, addressLimit: 20,
		accounts: map[string][]time.Time{}, addresses: map[string][]time.Time{}}
}

// blocked returns how long account or addr must wait, 0 if it may try now.
func (l *loginLimiter) blocked(account, addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.wait(l.accounts, account, l.accountLimit, now), l.wait(l.addresses, addr, l.addressLimit, now))
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

func (l *loginLimiter) failed(account, addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range []struct {
		m   map[string][]time.Time
		key string
	}{{l.accounts, account}, {l.addresses, addr}} {
		if len(e.m) >= maxTrackedKeys {
			clear(e.m) // bounded memory under a flood of distinct keys
		}
		ts := l.prune(e.m, e.key, now)
		e.m[e.key] = append(ts, now)
	}
}

func (l *loginLimiter) succeeded(account string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.accounts, account)
}
