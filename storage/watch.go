package storage

import (
	"context"
	"sync"
	"time"
)

// defaultWatchGrace is how long the changes channel stays listened after
// the last watcher has left, so that watchers coming and going (a Result
// call, a page's socket reconnecting) do not LISTEN and UNLISTEN each time.
const defaultWatchGrace = 2 * time.Second

// watchWait bounds how long Watch waits for the server's confirmation of
// LISTEN (a connection that hangs, a server that restarts): a watcher
// that stops waiting hears "" once the channel is listened, and re-reads.
const watchWait = 5 * time.Second

// changeListen is whether this process LISTENs on the changes channel.
// It does only while something in it watches (see Watch), so that a
// process nobody watches through is not sent every change of every run.
// The listener goroutine does the LISTEN and UNLISTEN; watchers ask it to
// and wait for the server's answer.
type changeListen struct {
	mu       sync.Mutex
	watchers int
	// lingering keeps the channel listened for a grace period after the
	// last watcher left; gen tells a stale grace timer from the current.
	lingering bool
	gen       uint64
	grace     time.Duration
	// listening is true once the server has confirmed LISTEN on the
	// listener's current connection, and false from the moment the
	// listener decides to UNLISTEN.
	listening bool
	// down is true while the listener has no connection and waits to
	// reconnect: watchers then do not wait for it.
	down bool
	// ready is closed when the LISTEN that watchers wait for is confirmed,
	// or the connection it was to be sent on is gone.
	ready chan struct{}
	// interrupt ends the listener's wait for a notification so that it
	// looks at watchers again; nil while it is not waiting.
	interrupt context.CancelFunc
	// resync says a change may have gone unheard while something watched:
	// OnChange hears "" once the channel is listened again.
	resync bool
}

// Watch makes this process hear of committed run changes (see OnChange)
// until unwatch is called; callers subscribe to what OnChange feeds before
// calling Watch and read what they show after it. On PostgreSQL the
// process LISTENs on the changes channel only while something watches, and
// Watch returns once the server has confirmed the LISTEN: every change
// committed after Watch returns reaches OnChange, or, when the listening
// connection breaks (or is down when Watch is called, or slow to
// confirm), OnChange hears "" once it listens again. Watch returns early
// when ctx ends. On SQLite changes are heard in-process and Watch does
// nothing.
func (db *DB) Watch(ctx context.Context) (unwatch func()) {
	if db.dialect != Postgres {
		return func() {}
	}
	if ready := db.changes.watch(); ready != nil {
		timeout := time.NewTimer(watchWait)
		select {
		case <-ready:
		case <-ctx.Done():
			db.changes.gaveUp()
		case <-timeout.C:
			db.changes.gaveUp()
		}
		timeout.Stop()
	}
	var once sync.Once
	return func() { once.Do(db.changes.unwatch) }
}

// watch counts a watcher in and returns what to wait on before it reads,
// or nil when the channel is listened already or the listener is down.
func (l *changeListen) watch() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watchers++
	l.gen++ // a pending grace timer no longer applies
	switch {
	case l.listening:
		return nil
	case l.down:
		l.resync = true
		return nil
	case l.ready == nil:
		l.ready = make(chan struct{})
		l.poke()
	}
	return l.ready
}

// gaveUp records that a watcher stopped waiting for its LISTEN: unless
// the LISTEN is confirmed meanwhile, OnChange hears "" once it is.
func (l *changeListen) gaveUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.listening {
		l.resync = true
	}
}

// unwatch counts a watcher out; the last one leaves the channel listened
// for the grace period.
func (l *changeListen) unwatch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watchers--
	if l.watchers > 0 {
		return
	}
	l.lingering = true
	l.gen++
	gen, grace := l.gen, l.grace
	if grace == 0 {
		grace = defaultWatchGrace
	}
	time.AfterFunc(grace, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.gen == gen {
			l.lingering = false
			l.poke()
		}
	})
}

// poke ends the listener's wait, if it waits. l.mu is held.
func (l *changeListen) poke() {
	if l.interrupt != nil {
		l.interrupt()
		l.interrupt = nil
	}
}

// wanted reports whether the channel should be listened now. l.mu is held.
func (l *changeListen) wanted() bool { return l.watchers > 0 || l.lingering }

// decide says which statement, if any, brings the connection to what
// watchers want: "LISTEN", "UNLISTEN" or "". From an UNLISTEN decided on,
// the channel counts as not listened, so a watcher arriving meanwhile
// waits for the LISTEN after it.
func (l *changeListen) decide() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch want := l.wanted(); {
	case want && !l.listening:
		return "LISTEN"
	case !want && l.listening:
		l.listening = false
		return "UNLISTEN"
	}
	return ""
}

// listened records the server's confirmation of a LISTEN, releases the
// watchers waiting for it and reports whether they must re-read all
// (OnChange hears "").
func (l *changeListen) listened() (resync bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listening = true
	if l.ready != nil {
		close(l.ready)
		l.ready = nil
	}
	resync, l.resync = l.resync && l.watchers > 0, false // with nobody watching, nobody has anything to re-read
	return resync
}

// waitContext returns the context the listener waits for a notification
// under, which a watcher's arrival or the grace's end cancels; ok is false
// when the listener must (un)listen first.
func (l *changeListen) waitContext(ctx context.Context) (wctx context.Context, cancel context.CancelFunc, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wanted() != l.listening {
		return nil, nil, false
	}
	wctx, cancel = context.WithCancel(ctx)
	l.interrupt = cancel
	return wctx, cancel, true
}

// connecting records that the listener is about to connect: watchers
// arriving from now on wait for their LISTEN.
func (l *changeListen) connecting() {
	l.mu.Lock()
	l.down = false
	l.mu.Unlock()
}

// lost records that the listener's connection is gone and that it waits
// before reconnecting: whatever watched may have missed changes, and
// watchers waiting for a LISTEN on it go on (they hear "" once the
// channel is listened again).
func (l *changeListen) lost() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listening || l.watchers > 0 {
		l.resync = true
	}
	l.listening, l.down, l.interrupt = false, true, nil
	if l.ready != nil {
		close(l.ready)
		l.ready = nil
	}
}
