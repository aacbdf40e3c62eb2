package domain

import "sync"

// Notification channels and the outcomes of one attempt to deliver, as
// DeliveryCounts counts them.
const (
	NotifyMail    = "mail"
	NotifyWebhook = "webhook"

	NotifySent     = "sent"
	NotifyRetrying = "retrying"
	NotifyFailed   = "failed"
)

// DeliveryCounts counts this process's attempts to deliver notifications,
// by channel and outcome. A nil *DeliveryCounts counts nothing.
type DeliveryCounts struct {
	mu sync.Mutex
	n  map[[2]string]uint64
}

// Add counts one attempt on channel that ended with outcome.
func (c *DeliveryCounts) Add(channel, outcome string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[[2]string]uint64{}
	}
	c.n[[2]string{channel, outcome}]++
}

// Snapshot is the counts so far, by channel and outcome.
func (c *DeliveryCounts) Snapshot() map[[2]string]uint64 {
	out := map[[2]string]uint64{}
	if c == nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
