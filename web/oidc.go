package web

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/uuid"
	"github.com/gorilla/securecookie"
	"golang.org/x/oauth2"

	"github.com/tollgatehq/tollgate/domain"
)

// OIDC signs people in with their organisation's OpenID Connect provider:
// the authorization code flow with PKCE, state and nonce, the provider
// found by discovery from its issuer and its ID tokens verified by go-oidc
// against the keys it publishes. A person is the Tollgate account with the
// email the provider has verified; Tollgate, not the provider, says who is
// disabled and what each person's role is once they have an account.
type OIDC struct {
	// Issuer is the provider's issuer URL (https://login.example.com).
	Issuer string
	// ClientID and ClientSecret are Tollgate's client at the provider,
	// whose redirect URL is <PublicURL>/login/oidc/callback.
	ClientID, ClientSecret string
	// Name is the provider as people know it, on the login page's button
	// (default: the issuer's host).
	Name string
	// Scopes are asked for besides openid (default: email and profile).
	Scopes []string
	// RoleClaim names the ID token claim whose values give a person
	// created at sign-in their role (default: groups). A dotted name
	// reaches into objects (realm_access.roles).
	RoleClaim string
	// Roles maps the claim's values to roles, such as tollgate-admins to
	// admin; a person whose values map to several roles gets the
	// strongest. AutoCreate needs it.
	Roles map[string]domain.Role
	// AutoCreate creates the account of a person the provider vouches for
	// who has none yet, with the role their claim maps to. Without it only
	// people invited to Tollgate sign in.
	AutoCreate bool
	// Client makes the requests to the provider (default: a client with
	// a 10-second timeout).
	Client *http.Client

	mu   sync.Mutex
	conn *oidcConn
}

// oidcConn is what discovery found: where to send people and how to check
// what comes back.
type oidcConn struct {
	endpoint oauth2.Endpoint
	verifier *oidc.IDTokenVerifier
}

// DisplayName is the provider's name on the login page.
func (o *OIDC) DisplayName() string {
	if o.Name != "" {
		return o.Name
	}
	if u, err := url.Parse(o.Issuer); err == nil && u.Host != "" {
		return u.Host
	}
	return "your organisation"
}

func (o *OIDC) context(ctx context.Context) context.Context {
	hc := o.Client
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return oidc.ClientContext(ctx, hc)
}

// connect discovers the provider on first use and keeps what it found; a
// provider that cannot be reached is asked again at the next sign-in.
func (o *OIDC) connect(ctx context.Context, now func() time.Time) (*oidcConn, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn != nil {
		return o.conn, nil
	}
	p, err := oidc.NewProvider(o.context(ctx), o.Issuer)
	if err != nil {
		return nil, err
	}
	o.conn = &oidcConn{endpoint: p.Endpoint(), verifier: p.Verifier(&oidc.Config{ClientID: o.ClientID, Now: now})}
	return o.conn, nil
}

func (o *OIDC) oauth(c *oidcConn, redirect string) *oauth2.Config {
	scopes := o.Scopes
	if len(scopes) == 0 {
		scopes = []string{"email", "profile"}
	}
	return &oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: c.endpoint,
		RedirectURL: redirect, Scopes: append([]string{oidc.ScopeOpenID}, scopes...)}
}

// signInState is what the browser carries from the start of a sign-in to
// its callback, encrypted and signed by gorilla/securecookie (AES-CTR and
// HMAC-SHA256) with keys derived from the server's device key, for ten
// minutes at most.
type signInState struct {
	State, Nonce, Verifier, Next string
}

const (
	signInCookie       = "tollgate_signin"
	secureSignInCookie = "__Host-tollgate_signin"
	signInTTL          = 10 * time.Minute
)

func (s *Server) signInCodec() *securecookie.SecureCookie {
	s.signInOnce.Do(func() {
		derive := func(label string) []byte {
			m := hmac.New(sha256.New, s.deviceKey())
			m.Write([]byte(label))
			return m.Sum(nil)
		}
		s.signInSeal = securecookie.New(derive("tollgate sign-in state mac"), derive("tollgate sign-in state key")).
			MaxAge(int(signInTTL / time.Second)).SetSerializer(securecookie.JSONEncoder{})
	})
	return s.signInSeal
}

func (s *Server) signInCookieName(r *http.Request) string {
	if s.sessions.secure(r) {
		return secureSignInCookie
	}
	return signInCookie
}

// startOIDC sends the browser to the provider with a fresh state, nonce
// and PKCE verifier, which it keeps in a sealed cookie until the callback.
func (s *Server) startOIDC(w http.ResponseWriter, r *http.Request) {
	conn, err := s.OIDC.connect(r.Context(), s.Clock.Now)
	if err != nil {
		s.Log.WarnContext(r.Context(), "Discovering the OpenID provider failed", "issuer", s.OIDC.Issuer, "error", err)
		s.showRefusal(w, r, "", signInUnreachable, safeNext(r.URL.Query().Get("next")))
		return
	}
	st := signInState{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Next: safeNext(r.URL.Query().Get("next"))}
	sealed, err := s.signInCodec().Encode(signInCookie, st)
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.signInCookieName(r), Value: sealed, Path: "/", MaxAge: int(signInTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.sessions.secure(r)})
	to := s.OIDC.oauth(conn, s.oidcRedirect(r)).AuthCodeURL(st.State, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier))
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func (s *Server) oidcRedirect(r *http.Request) string {
	return s.PublicBase(r) + "/login/oidc/callback"
}

// takeSignInState reads the sign-in the browser started and forgets it:
// each is good for one callback.
func (s *Server) takeSignInState(w http.ResponseWriter, r *http.Request) (signInState, bool) {
	var st signInState
	c, err := r.Cookie(s.signInCookieName(r))
	if err != nil {
		return st, false
	}
	http.SetCookie(w, &http.Cookie{Name: c.Name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.sessions.secure(r)})
	if err := s.signInCodec().Decode(signInCookie, c.Value, &st); err != nil || st.State == "" {
		return signInState{}, false
	}
	return st, true
}

// oidcCallback finishes a sign-in: the state must be the one this browser
// started with, the code is exchanged with its PKCE verifier, and the ID
// token must verify, carry the nonce and a verified email. Each refusal
// is audited and shown on the login page with why.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	st, ok := s.takeSignInState(w, r)
	if !ok {
		// No sign-in began in this browser: nothing to audit, as anyone
		// may call the callback.
		s.showRefusal(w, r, "", signInStale, "/")
		return
	}
	if subtle.ConstantTimeCompare([]byte(st.State), []byte(q.Get("state"))) != 1 {
		s.refuseSignIn(w, r, st, "", signInStale)
		return
	}
	if q.Get("error") != "" {
		s.refuseSignIn(w, r, st, "", signInDeclined)
		return
	}
	id, err := s.verifiedIdentity(r, st, q.Get("code"))
	if err != nil {
		var why signInRefusal
		if !errors.As(err, &why) {
			why = signInUnverified
		}
		s.Log.InfoContext(r.Context(), "A sign-in with the OpenID provider was refused", "reason", why.reason, "error", err)
		s.refuseSignIn(w, r, st, id.email, why)
		return
	}
	user, why := s.oidcAccount(r, id)
	if why.reason != "" {
		s.refuseSignIn(w, r, st, id.email, why)
		return
	}
	if err := s.StartSession(w, r, user.ID); err != nil {
		s.UIFailure(w, r, err)
		return
	}
	s.Audit(r, domain.AuditEntry{ActorID: user.ID, ActorEmail: user.Email, Action: "login", Data: AuditData(map[string]any{"provider": s.OIDC.DisplayName()})})
	http.Redirect(w, r, st.Next, http.StatusSeeOther)
}

// oidcIdentity is who the provider says signed in.
type oidcIdentity struct {
	email, name string
	roles       []string
}

// verifiedIdentity exchanges code for tokens and checks the ID token.
func (s *Server) verifiedIdentity(r *http.Request, st signInState, code string) (oidcIdentity, error) {
	o := s.OIDC
	conn, err := o.connect(r.Context(), s.Clock.Now)
	if err != nil {
		return oidcIdentity{}, errors.Join(signInUnreachable, err)
	}
	ctx := o.context(r.Context())
	tok, err := o.oauth(conn, s.oidcRedirect(r)).Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return oidcIdentity{}, errors.Join(signInCodeRefused, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return oidcIdentity{}, errors.Join(signInUnverified, errors.New("the token response has no id_token"))
	}
	idt, err := conn.verifier.Verify(ctx, raw)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		return oidcIdentity{}, errors.Join(signInExpired, err)
	case err != nil:
		return oidcIdentity{}, errors.Join(signInUnverified, err)
	case subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(st.Nonce)) != 1:
		return oidcIdentity{}, errors.Join(signInUnverified, errors.New("the ID token's nonce is not the one this sign-in sent"))
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return oidcIdentity{}, errors.Join(signInUnverified, err)
	}
	email, _ := claims["email"].(string)
	id := oidcIdentity{email: strings.ToLower(strings.TrimSpace(email)), roles: claimStrings(claims, cmp.Or(o.RoleClaim, "groups"))}
	id.name, _ = claims["name"].(string)
	if id.email == "" || !verifiedClaim(claims["email_verified"]) {
		return id, signInEmailUnverified
	}
	return id, nil
}

// verifiedClaim reads email_verified, which some providers send as the
// string "true"; absent is not verified.
func verifiedClaim(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// claimStrings reads the claim at a dotted path as strings: one string, or
// the strings of a list.
func claimStrings(claims map[string]any, path string) []string {
	var v any = claims
	for part := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// mappedRole is the strongest role id's claim values map to, or "".
func (o *OIDC) mappedRole(id oidcIdentity) domain.Role {
	roles := o.Roles
	rank := map[domain.Role]int{domain.RoleFounder: 1, domain.RoleReviewer: 2, domain.RoleAdmin: 3}
	var best domain.Role
	for _, v := range id.roles {
		if r := roles[v]; rank[r] > rank[best] {
			best = r
		}
	}
	return best
}

// oidcAccount is the account id signs in to: the one with its email, or,
// with AutoCreate, a new one with the role its claims map to.
func (s *Server) oidcAccount(r *http.Request, id oidcIdentity) (domain.User, signInRefusal) {
	// The email as the provider verified it, in lower case: a person
	// proves who they are with their own address, not one that mail
	// servers deliver to the same mailbox.
	user, _, err := s.Auth.UserByEmail(r.Context(), id.email)
	switch {
	case err == nil && user.Disabled:
		return user, signInDisabled
	case err == nil:
		return user, signInRefusal{}
	case !errors.Is(err, domain.ErrNotFound):
		s.Log.ErrorContext(r.Context(), "Looking up a user failed", "error", err)
		return user, signInUnavailable
	case !s.OIDC.AutoCreate:
		return user, signInNotInvited
	}
	role := s.OIDC.mappedRole(id)
	if role == "" {
		return user, signInNoRole
	}
	user, err = s.Auth.CreateUser(r.Context(), domain.User{ID: uuid.NewString(), Email: id.email, Name: id.name, Role: role, CreatedAt: s.Clock.Now()}, "")
	if errors.Is(err, domain.ErrConflict) { // another sign-in of the same person created it first
		return s.oidcAccount(r, id)
	}
	if err != nil {
		s.Log.ErrorContext(r.Context(), "Creating a user at sign-in failed", "error", err)
		return user, signInUnavailable
	}
	s.Audit(r, domain.AuditEntry{ActorID: user.ID, ActorEmail: user.Email, Action: "user.create", Subject: user.ID,
		Data: AuditData(map[string]any{"email": user.Email, "role": user.Role, "provider": s.OIDC.DisplayName()})})
	return user, signInRefusal{}
}

// signInRefusal is why a sign-in with the provider did not happen: a
// stable reason for the audit log and a sentence for the person.
type signInRefusal struct {
	reason string
	status int
	// say is the sentence, given the provider's name.
	say string
}

func (e signInRefusal) Error() string { return "sign-in refused: " + e.reason }

var (
	signInStale = signInRefusal{"state", http.StatusBadRequest,
		"This sign-in did not start in this browser, or took longer than ten minutes, so Tollgate did not finish it. Start again."}
	signInDeclined = signInRefusal{"declined", http.StatusUnauthorized,
		"%s did not sign you in. Start again, or ask your administrator whether you may use Tollgate."}
	signInCodeRefused = signInRefusal{"code", http.StatusUnauthorized,
		"%s did not accept this sign-in: its code was already used or has expired. Start again."}
	signInExpired = signInRefusal{"expired", http.StatusUnauthorized,
		"The proof of identity from %s had expired when it arrived. Start again; if it happens again, the server's clock may be wrong."}
	signInUnverified = signInRefusal{"unverified_token", http.StatusUnauthorized,
		"The proof of identity from %s could not be verified, so Tollgate did not sign you in. Start again."}
	signInEmailUnverified = signInRefusal{"unverified_email", http.StatusForbidden,
		"%s has not verified your email address, so Tollgate cannot tell which account is yours. Verify it there, then start again."}
	signInNotInvited = signInRefusal{"not_invited", http.StatusForbidden,
		"Only people invited to Tollgate can sign in with %s, and there is no account for your email. Ask an admin to invite you."}
	signInNoRole = signInRefusal{"no_role", http.StatusForbidden,
		"%s does not put you in a group that has a role in Tollgate, so no account was made for you. Ask an admin to invite you."}
	signInDisabled = signInRefusal{"disabled", http.StatusForbidden,
		"Your Tollgate account is disabled. Ask an admin if you need access."}
	signInUnreachable = signInRefusal{"unreachable", http.StatusServiceUnavailable,
		"%s cannot be reached right now. Try again shortly."}
	signInUnavailable = signInRefusal{"unavailable", http.StatusServiceUnavailable,
		"Tollgate could not sign you in right now. Try again shortly."}
)

// refuseSignIn audits a refused sign-in and shows the login page with why,
// ready to start again towards where st was going.
func (s *Server) refuseSignIn(w http.ResponseWriter, r *http.Request, st signInState, email string, why signInRefusal) {
	s.Audit(r, domain.AuditEntry{ActorEmail: email, Action: "login.failed", Data: AuditData(map[string]any{"provider": s.OIDC.DisplayName(), "reason": why.reason})})
	s.showRefusal(w, r, email, why, st.Next)
}

// showRefusal shows the login page with why a sign-in did not happen.
func (s *Server) showRefusal(w http.ResponseWriter, r *http.Request, email string, why signInRefusal, next string) {
	say := why.say
	if strings.Contains(say, "%s") {
		say = fmt.Sprintf(say, s.OIDC.DisplayName())
	}
	s.Render(w, r, why.status, s.loginView(email, say, cmp.Or(next, "/")))
}
