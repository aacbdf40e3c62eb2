package domain

import "sync"

// Fanout hands values to whoever follows a key (a run id) in this process,
// without ever blocking the publisher: a subscriber whose buffer is full
// misses the value. The zero value is ready to use.
type Fanout[T any] struct {
	mu   sync.Mutex
	subs map[string]map[chan T]struct{}
}

// Publish hands v to key's subscribers.
func (f *Fanout[T]) Publish(key string, v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[key] {
		select {
		case ch <- v:
		default:
		}
	}
}

// PublishAll hands v to every subscriber of every key.
func (f *Fanout[T]) PublishAll(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, subs := range f.subs {
		for ch := range subs {
			select {
			case ch <- v:
			default:
			}
		}
	}
}

// Subscribe follows key, with room for buffer values not yet taken, until
// stop is called.
func (f *Fanout[T]) Subscribe(key string, buffer int) (values <-chan T, stop func()) {
	ch := make(chan T, buffer)
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[string]map[chan T]struct{}{}
	}
	if f.subs[key] == nil {
		f.subs[key] = map[chan T]struct{}{}
	}
	f.subs[key][ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs[key], ch)
		if len(f.subs[key]) == 0 {
			delete(f.subs, key)
		}
	}
}
