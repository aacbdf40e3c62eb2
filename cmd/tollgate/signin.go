package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
)

// signInConfig is how people sign in to the web app: passwords, an OpenID
// Connect provider, or both.
type signInConfig struct {
	passwords                bool
	issuer, clientID, secret string
	name, scopes, roleClaim  string
	roles                    string
	autoCreate               bool
	parsedRoles              map[string]domain.Role
	mailButtons              string
}

func (f *envFlags) signIn(c *signInConfig) {
	f.BoolDefault(&c.passwords, "password-login", "TOLLGATE_PASSWORD_LOGIN", true, "let people sign in with a Tollgate password; false leaves only the OpenID provider")
	f.String(&c.issuer, "oidc-issuer", "TOLLGATE_OIDC_ISSUER", "", "issuer URL of the OpenID Connect provider people sign in with (https://login.example.com); its discovery document says the rest")
	f.String(&c.clientID, "oidc-client-id", "TOLLGATE_OIDC_CLIENT_ID", "", "Tollgate's client id at the provider, whose redirect URL is <public URL>/login/oidc/callback")
	f.String(&c.secret, "oidc-client-secret", "TOLLGATE_OIDC_CLIENT_SECRET", "", "that client's secret (prefer the environment variable to the flag)")
	f.String(&c.name, "oidc-name", "TOLLGATE_OIDC_NAME", "", "the provider's name on the login page's button, such as \"Acme SSO\" (default: the issuer's host)")
	f.String(&c.scopes, "oidc-scopes", "TOLLGATE_OIDC_SCOPES", "email profile", "scopes asked for besides openid, space- or comma-separated")
	f.String(&c.roleClaim, "oidc-role-claim", "TOLLGATE_OIDC_ROLE_CLAIM", "groups", "ID token claim whose values give a person created at sign-in their role; a dotted name reaches into objects (realm_access.roles)")
	f.String(&c.roles, "oidc-roles", "TOLLGATE_OIDC_ROLES", "", "which values of the role claim give which role: value=role, comma-separated, such as tollgate-admins=admin,tollgate-reviewers=reviewer; the strongest role wins")
	f.Bool(&c.autoCreate, "oidc-auto-create", "TOLLGATE_OIDC_AUTO_CREATE", "create the account of a person the provider vouches for who has none, with the role their claim maps to (needs --oidc-roles); without it only invited people sign in")
	f.String(&c.mailButtons, "mail-buttons", "TOLLGATE_MAIL_BUTTONS", "auto", "Approve and Reject buttons in mail about an approval, each a link that decides as its person without signing in: on, off, or auto (on unless --password-login=false)")
}

// check reads the role map and refuses a configuration nobody could sign
// in with.
func (c *signInConfig) check() error {
	switch c.mailButtons {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("--mail-buttons is on, off or auto, not %q", c.mailButtons)
	}
	if c.issuer == "" {
		if !c.passwords {
			return errors.New("--password-login=false needs --oidc-issuer: otherwise nobody could sign in")
		}
		return nil
	}
	if c.clientID == "" {
		return errors.New("--oidc-issuer needs --oidc-client-id")
	}
	if c.autoCreate && strings.TrimSpace(c.roles) == "" {
		return errors.New("--oidc-auto-create needs --oidc-roles: nobody gets a role by default")
	}
	c.parsedRoles = map[string]domain.Role{}
	for pair := range strings.SplitSeq(c.roles, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		value, role, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(value) == "" || !domain.Role(strings.TrimSpace(role)).Valid() {
			return fmt.Errorf("--oidc-roles: %q is not value=role with admin, reviewer or founder", pair)
		}
		c.parsedRoles[strings.TrimSpace(value)] = domain.Role(strings.TrimSpace(role))
	}
	return nil
}

// oidc is the provider c configures, or nil.
func (c signInConfig) oidc() *tollgate.OIDC {
	if c.issuer == "" {
		return nil
	}
	return &tollgate.OIDC{Issuer: c.issuer, ClientID: c.clientID, ClientSecret: c.secret, Name: c.name,
		Scopes:    strings.FieldsFunc(c.scopes, func(r rune) bool { return r == ' ' || r == ',' }),
		RoleClaim: c.roleClaim, Roles: c.parsedRoles, AutoCreate: c.autoCreate}
}

// mailButtonsConfig is --mail-buttons as tollgate.Config says it.
func (c signInConfig) mailButtonsConfig() string {
	if c.mailButtons == "auto" {
		return ""
	}
	return c.mailButtons
}
