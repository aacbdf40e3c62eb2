package web

import (
	"fmt"
	"sync"
)

// UploadRetryAfter is the Retry-After, in seconds, of an upload refused
// because too many are in flight.
const UploadRetryAfter = 30

// UploadSlots bounds the uploads this process reads at once, in all and
// per person: each one holds a connection, a chunk buffer and database
// writes for as long as the file takes to arrive.
type uploadSlots struct {
	mu      sync.Mutex
	perUser int
	total   int
	inUse   int
	users   map[string]int
}

// Acquire takes a slot for userID. It returns the function that gives it
// back, or, when none is free, why (a sentence for the person).
func (u *uploadSlots) Acquire(userID string) (release func(), busy string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.users[userID] >= u.perUser && u.perUser == 1:
		return nil, "You already have an upload in progress. Wait for it to finish, then try again."
	case u.users[userID] >= u.perUser:
		return nil, fmt.Sprintf("You already have %d uploads in progress. Wait for one to finish, then try again.", u.users[userID])
	case u.inUse >= u.total:
		return nil, "The server is busy with other uploads. Try again in a minute."
	}
	u.users[userID]++
	u.inUse++
	var once sync.Once
	return func() { once.Do(func() { u.release(userID) }) }, ""
}

func (u *uploadSlots) release(userID string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.inUse--
	if u.users[userID]--; u.users[userID] <= 0 {
		delete(u.users, userID)
	}
}

// UploadSlots returns the server's upload limiter, made on first use with
// UploadsPerUser (2) and UploadsInFlight (8).
func (s *Server) UploadSlots() *uploadSlots {
	s.slotsOnce.Do(func() {
		s.slots = &uploadSlots{perUser: s.UploadsPerUser, total: s.UploadsInFlight, users: map[string]int{}}
		if s.slots.perUser <= 0 {
			s.slots.perUser = 2
		}
		if s.slots.total <= 0 {
			s.slots.total = 8
		}
	})
	return s.slots
}
