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
	PasswordLogin    bool   `name:"password-login" env:"TOLLGATE_PASSWORD_LOGIN" default:"true" help:"Let people sign in with a Tollgate password; false leaves only the OpenID provider."`
	OIDCIssuer       string `name:"oidc-issuer" env:"TOLLGATE_OIDC_ISSUER" help:"Issuer URL of the OpenID Connect provider people sign in with (https://login.example.com); its discovery document says the rest."`
	OIDCClientID     string `name:"oidc-client-id" env:"TOLLGATE_OIDC_CLIENT_ID" help:"Tollgate's client id at the provider, whose redirect URL is <public URL>/login/oidc/callback."`
	OIDCClientSecret string `name:"oidc-client-secret" env:"TOLLGATE_OIDC_CLIENT_SECRET" help:"That client's secret (prefer the environment variable to the flag)."`
	OIDCName         string `name:"oidc-name" env:"TOLLGATE_OIDC_NAME" help:"The provider's name on the login page's button, such as \"Acme SSO\" (default: the issuer's host)."`
	OIDCScopes       string `name:"oidc-scopes" env:"TOLLGATE_OIDC_SCOPES" default:"email profile" help:"Scopes asked for besides openid, space- or comma-separated."`
	OIDCRoleClaim    string `name:"oidc-role-claim" env:"TOLLGATE_OIDC_ROLE_CLAIM" default:"groups" help:"ID token claim whose values give a person created at sign-in their role; a dotted name reaches into objects (realm_access.roles)."`
	OIDCRoles        string `name:"oidc-roles" env:"TOLLGATE_OIDC_ROLES" help:"Which values of the role claim give which role: value=role, comma-separated, such as tollgate-admins=admin,tollgate-reviewers=reviewer; the strongest role wins."`
	MailButtons      string `name:"mail-buttons" env:"TOLLGATE_MAIL_BUTTONS" default:"auto" help:"Approve and Reject buttons in mail about an approval, each a link that decides as its person without signing in: on, off, or auto (on unless --password-login=false)."`
	OIDCAutoCreate   bool   `name:"oidc-auto-create" env:"TOLLGATE_OIDC_AUTO_CREATE" help:"Create the account of a person the provider vouches for who has none, with the role their claim maps to (needs --oidc-roles); without it only invited people sign in."`

	parsedRoles map[string]domain.Role
}

// check reads the role map and refuses a configuration nobody could sign
// in with.
func (c *signInConfig) check() error {
	switch c.MailButtons {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("--mail-buttons is on, off or auto, not %q", c.MailButtons)
	}
	if c.OIDCIssuer == "" {
		if !c.PasswordLogin {
			return errors.New("--password-login=false needs --oidc-issuer: otherwise nobody could sign in")
		}
		return nil
	}
	if c.OIDCClientID == "" {
		return errors.New("--oidc-issuer needs --oidc-client-id")
	}
	if c.OIDCAutoCreate && strings.TrimSpace(c.OIDCRoles) == "" {
		return errors.New("--oidc-auto-create needs --oidc-roles: nobody gets a role by default")
	}
	c.parsedRoles = map[string]domain.Role{}
	for pair := range strings.SplitSeq(c.OIDCRoles, ",") {
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
	if c.OIDCIssuer == "" {
		return nil
	}
	return &tollgate.OIDC{Issuer: c.OIDCIssuer, ClientID: c.OIDCClientID, ClientSecret: c.OIDCClientSecret, Name: c.OIDCName,
		Scopes:    strings.FieldsFunc(c.OIDCScopes, func(r rune) bool { return r == ' ' || r == ',' }),
		RoleClaim: c.OIDCRoleClaim, Roles: c.parsedRoles, AutoCreate: c.OIDCAutoCreate}
}

// mailButtonsConfig is --mail-buttons as tollgate.Config says it.
func (c signInConfig) mailButtonsConfig() string {
	if c.MailButtons == "auto" {
		return ""
	}
	return c.MailButtons
}
