package domain_test

import (
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// PublishAll reaches the followers of every key, and never blocks on one
// whose buffer is full.
func TestFanoutPublishAllReachesEveryKey(t *testing.T) {
	var f domain.Fanout[int]
	a, stopA := f.Subscribe("run-a", 1)
	defer stopA()
	b, stopB := f.Subscribe("run-b", 1)
	defer stopB()
	f.Publish("run-a", 1)
	f.PublishAll(2)
	if got := <-a; got != 1 {
		t.Errorf("run-a's follower got %d first; want 1, its buffer full before PublishAll", got)
	}
	if got := <-b; got != 2 {
		t.Errorf("run-b's follower got %d; want 2", got)
	}
}
