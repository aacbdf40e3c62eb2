package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tollgatehq/tollgate/domain"
)

// Live updates: one websocket per tab says "this run changed" to the tabs
// whose page shows it; the tab then reloads the changed parts of its page
// with an ordinary, session-authorised GET. Messages carry no data a page
// would not show, and each goes only to tabs allowed to see that run:
// reviewers and admins on the inbox (every change) or on that run's or
// suspension's page, founders on their list when the run has a suspension
// assigned to them. A notice only says "re-read your page", so a tab that
// falls behind drops the notices beyond its queue, which holds unread ones
// already; on a reconnect it re-reads its page, so no change is lost.

const (
	LiveWriteWait  = 10 * time.Second
	livePongWait   = 60 * time.Second
	livePingPeriod = 25 * time.Second
	liveSendBuffer = 32
)

type liveClient struct {
	send  chan []byte
	scope string // "inbox", "my", or "run"
	runID string // for "run"
	email string // for "my"
}

type liveHub struct {
	store   domain.Store
	log     interface{ Warn(string, ...any) }
	changes chan string

	mu      sync.Mutex
	clients map[*liveClient]struct{}
}

func newLiveHub(store domain.Store, s *Server) *liveHub {
	h := &liveHub{store: store, log: s.Log, changes: make(chan string, 4096), clients: map[*liveClient]struct{}{}}
	go h.run()
	return h
}

// publish hears of a changed run. It never blocks the committer: when the
// queue is full the change is dropped and every tab told to re-sync.
func (h *liveHub) publish(runID string) {
	select {
	case h.changes <- runID:
	default:
		h.broadcastResync()
	}
}

func (h *liveHub) run() {
	for runID := range h.changes {
		if runID == "" { // changes may have gone unheard
			h.broadcastResync()
			continue
		}
		h.fanOut(runID)
	}
}

func (h *liveHub) fanOut(runID string) {
	msg, _ := json.Marshal(map[string]string{"type": "changed", "runId": runID})
	h.mu.Lock()
	var founders bool
	for c := range h.clients {
		switch {
		case c.scope == "inbox", c.scope == "run" && c.runID == runID:
			h.deliver(c, msg)
		case c.scope == "my":
			founders = true
		}
	}
	h.mu.Unlock()
	if !founders {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ss, _, err := h.store.Suspensions(ctx, domain.SuspensionFilter{RunID: runID, Limit: 500})
	if err != nil {
		h.log.Warn("Live update: reading a run's suspensions failed", "run_id", runID, "error", err)
		return
	}
	// A founder is told only that something of theirs changed.
	mine, _ := json.Marshal(map[string]string{"type": "changed"})
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		if c.scope != "my" {
			continue
		}
		founder := domain.User{Email: c.email, Role: domain.RoleFounder}
		if slices.ContainsFunc(ss, func(s domain.Suspension) bool { return s.MayRead(founder) }) {
			h.deliver(c, mine)
		}
	}
}

// deliver queues msg for c. A tab whose queue is full loses nothing when
// msg is dropped: it has notices it has not read yet, each of which makes
// it re-read its page after this change committed. So a busy inbox tab,
// told of every change, is not cut off; a tab that stops reading is closed
// by the write deadline. h.mu is held.
func (h *liveHub) deliver(c *liveClient, msg []byte) {
	select {
	case c.send <- msg:
	default:
	}
}

func (h *liveHub) broadcastResync() {
	msg, _ := json.Marshal(map[string]string{"type": "resync"})
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		h.deliver(c, msg)
	}
}

func (h *liveHub) add(c *liveClient) {
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
}

func (h *liveHub) remove(c *liveClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		close(c.send)
	}
}

// Publish tells the open pages that a run changed ("": anything may have
// changed, re-read). The server subscribes it to the store's change
// announcements itself; embedders may call it.
func (s *Server) Publish(runID string) {
	if s.live != nil {
		s.live.publish(runID)
	}
}

// liveSocket upgrades a signed-in tab to its update stream. The scope is
// authorised like the page it serves; the handshake must come from this
// site (a websocket is not covered by cross-origin form protection).
func (s *Server) liveSocket(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	c := &liveClient{send: make(chan []byte, liveSendBuffer)}
	scope := r.URL.Query().Get("scope")
	switch {
	case scope == "inbox" && v.Staff():
		c.scope = "inbox"
	case scope == "my" && FounderOnly(v.Role):
		c.scope, c.email = "my", v.Email
	case strings.HasPrefix(scope, "run:") && v.Staff():
		c.scope, c.runID = "run", strings.TrimPrefix(scope, "run:")
	case strings.HasPrefix(scope, "suspension:"):
		sp, err := s.VisibleSuspension(r, ViewerPrincipal(v), strings.TrimPrefix(scope, "suspension:"))
		if err != nil {
			http.Error(w, "no such page", http.StatusNotFound)
			return
		}
		c.scope, c.runID = "run", sp.RunID
	default:
		http.Error(w, "this page has no live updates for your role", http.StatusForbidden)
		return
	}
	if !s.sockets.acquire(v.ID, capOr(s.MaxSocketsPerUser, defaultMaxSocketsPerUser)) {
		http.Error(w, "too many live connections for your account; close some tabs", http.StatusTooManyRequests)
		return
	}
	defer s.sockets.release(v.ID)
	// The tab hears of every change committed once its socket is open.
	defer s.watch.hold(r.Context())()
	s.live.add(c)
	defer s.live.remove(c)
	up := websocket.Upgrader{ReadBufferSize: 512, WriteBufferSize: 1024, CheckOrigin: sameOrigin}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	go s.liveWrite(conn, c)
	liveRead(conn)
}

// sameOrigin accepts a handshake whose Origin is this host; browsers always
// send Origin on websocket handshakes.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// liveRead keeps the connection's read side alive (pongs) until it closes;
// the tab sends nothing that matters.
func liveRead(conn *websocket.Conn) {
	conn.SetReadLimit(512)
	_ = conn.SetReadDeadline(time.Now().Add(livePongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(livePongWait)) })
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			return
		}
	}
}

func (s *Server) liveWrite(conn *websocket.Conn, c *liveClient) {
	ping := time.NewTicker(livePingPeriod)
	defer func() {
		ping.Stop()
		conn.Close()
	}()
	for {
		select {
		case msg, ok := <-c.send:
			_ = conn.SetWriteDeadline(time.Now().Add(LiveWriteWait))
			if !ok {
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "re-sync"))
				return
			}
			if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		case <-ping.C:
			_ = conn.SetWriteDeadline(time.Now().Add(LiveWriteWait))
			if err := conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		case <-s.closing: // shutting down: the page reconnects and re-syncs
			_ = conn.SetWriteDeadline(time.Now().Add(LiveWriteWait))
			_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"))
			return
		}
	}
}
