package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// bootstrap creates the first admin and an API key on a fresh database and
// prints them once; they are not shown again (only a hash of the key is
// kept). TOLLGATE_BOOTSTRAP_API_KEY supplies the key for automation. With
// no email, the admin's is generated (generatedAdminEmail), so that no
// two installations share a predictable admin login.
func bootstrap(ctx context.Context, db *storage.DB, email, key string, out io.Writer) error {
	n, err := db.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	if email == "" {
		email = generatedAdminEmail()
	}
	// Checked before the admin exists: an admin created without its key
	// would end bootstrapping for good, with the password never shown.
	if key != "" && len(key) < minKeyLen {
		return fmt.Errorf("TOLLGATE_BOOTSTRAP_API_KEY must have at least %d characters", minKeyLen)
	}
	password := rand.Text()
	hash, err := web.HashPassword(password)
	if err != nil {
		return err
	}
	now := time.Now()
	u, err := db.CreateUser(ctx, domain.User{ID: uuid.NewString(), Email: email, Name: "Administrator", Role: domain.RoleAdmin, CreatedAt: now}, hash)
	if errors.Is(err, domain.ErrConflict) {
		return nil // another server bootstrapped the same database first
	}
	if err != nil {
		return err
	}
	secret, err := createKey(ctx, db, u.ID, "bootstrap", key)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Created the first admin (shown once, keep it safe):\n  email:    %s\n  password: %s\n", u.Email, password)
	if key == "" {
		fmt.Fprintf(out, "  API key:  %s\n", secret)
	} else {
		fmt.Fprintln(out, "  API key:  from TOLLGATE_BOOTSTRAP_API_KEY")
	}
	return nil
}

// generatedAdminEmail is admin-<6 random hex digits>@tollgate.local.
func generatedAdminEmail() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "admin-" + hex.EncodeToString(b) + "@tollgate.local"
}

// minKeyLen is the shortest API key a user may choose.
const minKeyLen = 24

func createKey(ctx context.Context, db *storage.DB, userID, name, secret string) (string, error) {
	var prefix string
	var hash []byte
	if secret == "" {
		secret, prefix, hash = web.NewAPIKey()
	} else {
		if len(secret) < minKeyLen {
			return "", fmt.Errorf("an API key must have at least %d characters", minKeyLen)
		}
		prefix, hash = web.APIKeyPrefix(secret), web.HashAPIKey(secret)
	}
	k := domain.APIKey{ID: uuid.NewString(), Name: name, Prefix: prefix, UserID: userID, CreatedAt: time.Now()}
	return secret, db.CreateAPIKey(ctx, k, hash)
}

// openFor opens the database c names, logging to stderr as c says.
func (c dbConfig) openFor(ctx context.Context, stderr io.Writer) (*storage.DB, error) {
	log, err := c.logger(stderr)
	if err != nil {
		return nil, err
	}
	return c.open(ctx, log)
}

// migrateCLI is tollgate migrate: it applies the migrations (up, the
// default), lists them with their state (status, --json for programs) or
// undoes the newest applied one (down).
type migrateCLI struct {
	dbConfig
	Action string `arg:"" optional:"" default:"up" help:"up (the default), status or down."`
	JSON   bool   `name:"json" help:"With status: print JSON for programs."`
}

func (c *migrateCLI) Run(e *cmdEnv) error {
	ctx, stdout, action, asJSON := e.ctx, e.stdout, c.Action, c.JSON
	if action != "up" && action != "status" && action != "down" {
		return usageError{fmt.Errorf("unknown migrate action %q: use up (the default), status or down", action)}
	}
	db, err := c.openFor(ctx, e.stderr)
	if err != nil {
		return err
	}
	defer db.Close()
	switch action {
	case "status":
		ms, err := db.MigrationStatus(ctx)
		if err != nil {
			return err
		}
		p := printer{stdout, asJSON}
		if asJSON {
			return p.value(ms)
		}
		rows := make([][]string, len(ms))
		for i, m := range ms {
			state, at := "pending", ""
			if m.Applied {
				state, at = "applied", when(m.AppliedAt)
			}
			rows[i] = []string{m.Name, m.Comment, state, at}
		}
		return p.table([]string{"MIGRATION", "WHAT", "STATE", "APPLIED"}, rows)
	case "down":
		name, err := db.MigrateDown(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Undid migration %s; this version of tollgate needs it: run tollgate migrate to apply it again.\n", name)
		return nil
	}
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Migrations are current.")
	return nil
}

// userAddCLI is tollgate user add. The password comes from
// TOLLGATE_PASSWORD, never the command line (where other users of the
// machine see it), or is generated and shown once.
type userAddCLI struct {
	dbConfig
	Email string `required:"" help:"Email address (their login)."`
	Role  string `default:"reviewer" help:"admin, reviewer or founder."`
	Name  string `help:"Display name."`
}

func (c *userAddCLI) Run(e *cmdEnv) error {
	ctx, stdout, email, role, name := e.ctx, e.stdout, c.Email, c.Role, c.Name
	password, generated := e.getenv("TOLLGATE_PASSWORD"), false
	if password == "" {
		password, generated = rand.Text(), true
	}
	if !strings.Contains(email, "@") || !domain.Role(role).Valid() {
		return usageError{errors.New("--email must be an address and --role one of admin, reviewer, founder")}
	}
	// Only a password from the environment can break the password rule: a
	// generated one has 26 random characters.
	if err := domain.ValidatePassword(password, email); err != nil {
		return fmt.Errorf("TOLLGATE_PASSWORD: %w", err)
	}
	db, err := c.openFor(ctx, e.stderr)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	hash, err := web.HashPassword(password)
	if err != nil {
		return err
	}
	u, err := db.CreateUser(ctx, domain.User{ID: uuid.NewString(), Email: email, Name: name, Role: domain.Role(role), CreatedAt: time.Now()}, hash)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Created %s %s (id %s)\n", u.Role, u.Email, u.ID)
	if generated {
		fmt.Fprintf(stdout, "Password (shown once): %s\n", password)
	}
	return nil
}

// apikeyCreateCLI is tollgate apikey create.
type apikeyCreateCLI struct {
	dbConfig
	Email string `required:"" help:"The key's owner: a user's email."`
	Name  string `default:"cli" help:"A name to tell keys apart."`
}

func (c *apikeyCreateCLI) Run(e *cmdEnv) error {
	ctx, stdout, email, name := e.ctx, e.stdout, c.Email, c.Name
	if !strings.Contains(email, "@") {
		return usageError{errors.New("--email must name the key's owner, a user's address")}
	}
	db, err := c.openFor(ctx, e.stderr)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	u, _, err := db.UserByEmail(ctx, email)
	if err != nil {
		return fmt.Errorf("user %q: %w", email, err)
	}
	secret, err := createKey(ctx, db, u.ID, name, "")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "API key for %s (shown once): %s\n", u.Email, secret)
	return nil
}

// backupCLI is tollgate backup: it copies the embedded database to a new
// file while servers use it (storage.Backup). It opens an existing
// database only: a wrong --data must not back up a new, empty one.
type backupCLI struct {
	dbConfig
	To string `required:"" placeholder:"FILE" help:"File to write the backup to (must not exist; its folder is made if missing)."`
}

func (c *backupCLI) Run(e *cmdEnv) error {
	ctx, stdout, to := e.ctx, e.stdout, c.To
	if c.DatabaseURL != "" {
		return usageError{errors.New("backup copies the embedded database; back up PostgreSQL with pg_dump (see docs/operating.md, Backup and restore)")}
	}
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("%s exists; name a new file", to)
	}
	src := filepath.Join(c.DataDir, "tollgate.db")
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("no database to back up: %w", err)
	}
	db, err := c.openFor(ctx, e.stderr)
	if err != nil {
		return err
	}
	defer db.Close()
	// The folder is made here, after the checks above, so that a refused
	// command leaves nothing behind; only its owner reads it, since a
	// backup holds the same secrets as the database.
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return fmt.Errorf("backup to %s: %w", to, err)
	}
	start := time.Now()
	if err := db.Backup(ctx, to); err != nil {
		return err
	}
	st, err := os.Stat(to)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Backed up %s to %s (%d bytes, %s).\n", src, to, st.Size(), time.Since(start).Round(time.Millisecond))
	return nil
}
