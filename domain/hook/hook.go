// Package hook delivers signed webhooks: admins subscribe URLs to event
// types, the store records each event in the transaction of the change it
// reports with one delivery per subscription, and a dispatcher posts them,
// signed, retrying with backoff until a 2xx answer or 24 hours.
package hook

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

// Hooks manages subscriptions and delivers their events. Store, Allow and
// Key are required.
type Hooks struct {
	Store domain.SubscriptionStore
	// Allow says which URLs may be subscribed and called: the rules of
	// http steps (--http-allow).
	Allow *flow.AllowList
	// Key seals signing secrets at rest (32 bytes, derived from the
	// server secret, so every server sharing a database opens them).
	Key []byte
	// PublicURL, when it returns one, gives events the url of their page.
	PublicURL func() string
	// Client posts deliveries; nil builds one that dials only what Allow
	// allows and follows no redirect.
	Client *http.Client
	Clock  domain.Clock
	Log    *slog.Logger
	Opts   Opts
	// Counts, when set, counts the attempts this process makes.
	Counts *domain.DeliveryCounts
}

// maxURL bounds a subscription's URL.
const maxURL = 2000

// Subscribe checks and stores a subscription of rawURL to events, and
// returns it with its signing secret: 256 random bits, hex-encoded, which
// nothing returns again.
func (h *Hooks) Subscribe(ctx context.Context, rawURL string, events []string, by string, audit *domain.AuditEntry) (domain.Subscription, string, error) {
	if err := h.CheckURL(rawURL); err != nil {
		return domain.Subscription{}, "", err
	}
	if err := domain.CheckHookEvents(events); err != nil {
		return domain.Subscription{}, "", err
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	secret := hex.EncodeToString(raw)
	s := domain.Subscription{ID: uuid.Must(uuid.NewV7()).String(), URL: rawURL, Events: events, CreatedBy: by, CreatedAt: h.now()}
	sealed, err := h.seal(s.ID, []byte(secret))
	if err != nil {
		return domain.Subscription{}, "", err
	}
	s, err = h.Store.CreateSubscription(ctx, domain.NewSubscription{Subscription: s, SealedSecret: sealed, Audit: audit})
	if err != nil {
		return domain.Subscription{}, "", fmt.Errorf("subscribe %s: %w", rawURL, err)
	}
	return s, secret, nil
}

// CheckURL refuses what is not an absolute http(s) URL without
// credentials, and addresses the allow-list refuses. A name is checked
// again when each delivery dials it, since what it resolves to may change.
func (h *Hooks) CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	switch {
	case rawURL == "":
		return urlError(domain.CodeInvalidURL, "A subscription needs the url events are posted to.")
	case len(rawURL) > maxURL:
		return urlError(domain.CodeInvalidURL, fmt.Sprintf("The url has more than %d characters.", maxURL))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "":
		return urlError(domain.CodeInvalidURL, fmt.Sprintf("%q is not an absolute http:// or https:// URL without credentials or fragment.", rawURL))
	case !h.Allow.Allows(u):
		return urlError(domain.CodeAddressRefused, fmt.Sprintf(
			"This server may not call %s (allowed: %s); an operator can list the host in --http-allow (TOLLGATE_HTTP_ALLOW).", u.Host, h.Allow))
	}
	return nil
}

func urlError(code, msg string) error {
	return &domain.ValidationError{Code: code, Message: msg, Fields: []domain.FieldError{{Field: "/url", Message: msg}}}
}

// errSealed is a secret that this server's key does not open: the server
// secret changed since the subscription was made.
var errSealed = errors.New("the signing secret cannot be opened: the server secret changed since the subscription was made; subscribe again")

// seal encrypts a signing secret for the store, bound to its subscription.
func (h *Hooks) seal(id string, secret []byte) ([]byte, error) {
	aead, err := h.aead()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, secret, []byte(id)), nil
}

// open decrypts what seal made for subscription id.
func (h *Hooks) open(id string, sealed []byte) ([]byte, error) {
	aead, err := h.aead()
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errSealed
	}
	secret, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(id))
	if err != nil {
		return nil, errSealed
	}
	return secret, nil
}

func (h *Hooks) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(h.Key)
	if err != nil {
		return nil, fmt.Errorf("subscription key: %w", err)
	}
	return cipher.NewGCM(block)
}

func (h *Hooks) now() time.Time {
	if h.Clock == nil {
		return time.Now().UTC()
	}
	return h.Clock.Now()
}

// pageURL is the page of what an event is about, when the public URL is
// known.
func (h *Hooks) pageURL(e domain.HookEvent, id string) string {
	if h.PublicURL == nil || id == "" {
		return ""
	}
	base := strings.TrimSuffix(h.PublicURL(), "/")
	if base == "" {
		return ""
	}
	if strings.HasPrefix(e.Type, "suspension.") {
		return base + "/suspensions/" + url.PathEscape(id)
	}
	return base + "/runs/" + url.PathEscape(id)
}
