package web

import "testing"

// An inbox tab hears of every change. One that has not read its queue yet
// keeps its connection when more changes come: the notices it has not
// read make it re-read its page, so those beyond its queue are dropped,
// not the tab.
func TestLiveHubKeepsATabBehindItsQueue(t *testing.T) {
	h := &liveHub{clients: map[*liveClient]struct{}{}}
	c := &liveClient{send: make(chan []byte, liveSendBuffer), scope: "inbox"}
	h.add(c)
	for i := range liveSendBuffer + 10 {
		h.fanOut("run-" + string(rune('a'+i%26)))
	}
	if _, ok := h.clients[c]; !ok {
		t.Fatal("a tab behind its queue was cut off")
	}
	if n := len(c.send); n != liveSendBuffer {
		t.Fatalf("%d notices queued; want a full queue of %d", n, liveSendBuffer)
	}
	for range liveSendBuffer {
		if _, open := <-c.send; !open {
			t.Fatal("the tab's queue was closed")
		}
	}
	h.fanOut("run-after")
	if got := string(<-c.send); got != `{"runId":"run-after","type":"changed"}` {
		t.Fatalf("the next notice after the tab caught up: %s", got)
	}
}

// A change that may have gone unheard (the store says "") tells every
// tab to re-read its page.
func TestLiveHubResyncsEveryTabOnAnUnheardChange(t *testing.T) {
	h := &liveHub{clients: map[*liveClient]struct{}{}, changes: make(chan string, 1)}
	go h.run()
	defer close(h.changes)
	tabs := []*liveClient{
		{send: make(chan []byte, 1), scope: "run", runID: "run-a"},
		{send: make(chan []byte, 1), scope: "my", email: "a@founders.example"},
	}
	for _, c := range tabs {
		h.add(c)
	}
	h.publish("")
	for _, c := range tabs {
		if got := string(<-c.send); got != `{"type":"resync"}` {
			t.Errorf("%s tab was told %s; want a re-sync", c.scope, got)
		}
	}
}
