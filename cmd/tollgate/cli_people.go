package main

import (
	"fmt"
	"strconv"
	"strings"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// The people commands: accounts and their API keys through a server's API
// (admins' keys), as the users page looks after them. user add and apikey
// create write to a database directly instead, for a server's first
// admin and key.

type usersCLI struct {
	List   usersListCmd   `cmd:"" help:"List every account."`
	Invite usersInviteCmd `cmd:"" help:"Create an account with a one-time password, printed once."`
	Update usersUpdateCmd `cmd:"" help:"Change a user's role (--role), or disable (--disable) or enable (--enable) them."`
}

type usersListCmd struct{ apiFlags }

type usersInviteCmd struct {
	apiFlags
	Email string `arg:"" help:"Their email address (their login)."`
	Role  string `required:"" enum:"admin,reviewer,founder" help:"admin, reviewer or founder."`
	Name  string `help:"Their name, as pages show it."`
}

type usersUpdateCmd struct {
	apiFlags
	ID      string `arg:"" name:"user" help:"The user's id."`
	Role    string `enum:",admin,reviewer,founder" default:"" help:"The new role: admin, reviewer or founder."`
	Disable bool   `help:"Disable the account: its sessions end and its keys are refused."`
	Enable  bool   `help:"Enable a disabled account again."`
}

func (f *usersListCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	users, err := api.ListUsers(e.ctx)
	if err != nil {
		return err
	}
	if p.json {
		return p.value(orEmpty(users))
	}
	rows := make([][]string, len(users))
	for i, u := range users {
		state := "active"
		if u.Disabled {
			state = "disabled"
		}
		rows[i] = []string{u.ID, u.Email, u.Name, u.Role, state}
	}
	return p.table([]string{"ID", "EMAIL", "NAME", "ROLE", "STATE"}, rows)
}

func (f *usersInviteCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	u, err := api.InviteUser(e.ctx, f.Email, f.Name, f.Role)
	if err != nil {
		return err
	}
	if p.json {
		return p.value(u)
	}
	return p.fields("User", u.ID, "Email", u.Email, "Role", u.Role, "Password (shown once)", u.Password)
}

func (f *usersUpdateCmd) Run(e *cmdEnv) error {
	if f.Disable && f.Enable {
		return usageError{fmt.Errorf("--disable and --enable say opposite things: give one")}
	}
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	var change apiclient.UserChange
	if f.Role != "" {
		change.Role = &f.Role
	}
	if f.Disable || f.Enable {
		change.Disabled = apiclient.Ptr(f.Disable)
	}
	u, err := api.UpdateUser(e.ctx, f.ID, change)
	if err != nil {
		return err
	}
	if p.json {
		return p.value(u)
	}
	return p.fields("User", u.ID, "Email", u.Email, "Role", u.Role, "Disabled", strconv.FormatBool(u.Disabled))
}

type keysCLI struct {
	List   keysListCmd   `cmd:"" help:"List API keys, revoked ones too."`
	Create keysCreateCmd `cmd:"" help:"Make an API key for a user; the key is printed once."`
	Revoke keysRevokeCmd `cmd:"" help:"Revoke an API key at once."`
}

type keysListCmd struct {
	apiFlags
	User string `help:"Only this user's keys (their id)."`
}

type keysCreateCmd struct {
	apiFlags
	User   string   `arg:"" help:"The key's owner (their id)."`
	Name   string   `required:"" help:"A name to tell the key apart later."`
	Scopes []string `help:"What the key may do, within what its owner may (comma-separated): runs:read, runs:start, runs:manage, signals:send, suspensions:read, suspensions:decide, workflows:read, workflows:write, admin. Without it, all its owner may."`
}

type keysRevokeCmd struct {
	apiFlags
	ID string `arg:"" name:"key" help:"The key's id."`
}

func (f *keysListCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	keys, err := api.ListKeys(e.ctx, f.User)
	if err != nil {
		return err
	}
	if p.json {
		return p.value(orEmpty(keys))
	}
	rows := make([][]string, len(keys))
	for i, k := range keys {
		state := "active"
		if k.RevokedAt != nil {
			state = "revoked " + when(*k.RevokedAt)
		}
		rows[i] = []string{k.ID, k.Name, k.Prefix + "…", k.UserID, when(k.CreatedAt), state}
	}
	return p.table([]string{"ID", "NAME", "KEY", "USER", "CREATED", "STATE"}, rows)
}

func (f *keysCreateCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	k, err := api.CreateKey(e.ctx, f.User, f.Name, splitList(f.Scopes)...)
	if err != nil {
		return err
	}
	if p.json {
		return p.value(k)
	}
	return p.fields("Key", k.ID, "Name", k.Name, "User", k.UserID, "Scopes", strings.Join(k.Scopes, ", "), "Secret (shown once)", k.Secret)
}

func (f *keysRevokeCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	if err := api.RevokeKey(e.ctx, f.ID); err != nil {
		return err
	}
	if p.json {
		return p.value(map[string]any{"id": f.ID, "revoked": true})
	}
	_, err = fmt.Fprintf(p.out, "Revoked key %s.\n", f.ID)
	return err
}
