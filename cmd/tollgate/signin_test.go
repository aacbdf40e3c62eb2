package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// Sign-in flags are read from the environment as the operators
// write them, and a configuration nobody could sign in with is refused at
// start.
func TestServeSignInFlags(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TOLLGATE_PASSWORD_LOGIN": "false"}, "--password-login=false needs --oidc-issuer"},
		{map[string]string{"TOLLGATE_OIDC_ISSUER": "https://login.example.com"}, "needs --oidc-client-id"},
		{map[string]string{"TOLLGATE_OIDC_ISSUER": "https://login.example.com", "TOLLGATE_OIDC_CLIENT_ID": "tollgate", "TOLLGATE_OIDC_ROLES": "ops=owner"}, `"ops=owner" is not value=role`},
		{map[string]string{"TOLLGATE_PASSWORD_LOGIN": "nope"}, "$TOLLGATE_PASSWORD_LOGIN: \"nope\" is not true or false"},
		{map[string]string{"TOLLGATE_OIDC_ISSUER": "https://login.example.com", "TOLLGATE_OIDC_CLIENT_ID": "tollgate", "TOLLGATE_OIDC_AUTO_CREATE": "true"}, "--oidc-auto-create needs --oidc-roles"},
		{map[string]string{"TOLLGATE_MAIL_BUTTONS": "maybe"}, "--mail-buttons is on, off or auto"},
		{map[string]string{"TOLLGATE_SLACK_BOT_TOKEN": "xoxb-1"}, "go together"},
	} {
		_, err := parseServe(nil, func(k string) string { return c.env[k] }, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.env, err, c.want)
		}
	}
	cfg, err := parseServe(nil, func(k string) string {
		return map[string]string{"TOLLGATE_OIDC_ISSUER": "https://login.example.com", "TOLLGATE_OIDC_CLIENT_ID": "tollgate",
			"TOLLGATE_OIDC_CLIENT_SECRET": "s3cret", "TOLLGATE_OIDC_SCOPES": "email,profile groups", "TOLLGATE_OIDC_ROLE_CLAIM": "roles",
			"TOLLGATE_OIDC_ROLES": "it=admin, finance=reviewer", "TOLLGATE_OIDC_AUTO_CREATE": "true", "TOLLGATE_PASSWORD_LOGIN": "false"}[k]
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.config(nil, "https://tollgate.example.com", "test", "")
	o := c.OIDC
	if o == nil || !c.NoPasswordLogin || o.Issuer != "https://login.example.com" || o.ClientID != "tollgate" || o.ClientSecret != "s3cret" ||
		o.RoleClaim != "roles" || !o.AutoCreate || !reflect.DeepEqual(o.Scopes, []string{"email", "profile", "groups"}) ||
		!reflect.DeepEqual(o.Roles, map[string]domain.Role{"it": domain.RoleAdmin, "finance": domain.RoleReviewer}) {
		t.Errorf("config = %+v (no passwords %v)", o, c.NoPasswordLogin)
	}
	if cfg, err := parseServe(nil, func(string) string { return "" }, nil); err != nil || cfg.config(nil, "", "", "").OIDC != nil || cfg.config(nil, "", "", "").NoPasswordLogin ||
		cfg.config(nil, "", "", "").MailButtons != "" {
		t.Errorf("by default passwords alone sign people in, and mail buttons follow them (%v)", err)
	}
	if cfg, err := parseServe(nil, func(k string) string { return map[string]string{"TOLLGATE_MAIL_BUTTONS": "off"}[k] }, nil); err != nil || cfg.config(nil, "", "", "").MailButtons != "off" {
		t.Errorf("--mail-buttons off is not passed on (%v)", err)
	}
}
