package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/domain/mail"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/storage"
)

// dbConfig is what every command that opens the database takes: the
// flags, each with its environment variable, that say which and how to
// log.
type dbConfig struct {
	DataDir     string `name:"data" env:"TOLLGATE_DATA" default:"${defaultDataDir}" help:"Folder of the embedded database (tollgate.db)."`
	DatabaseURL string `name:"database-url" env:"DATABASE_URL" help:"postgres://… URL; selects PostgreSQL instead of the embedded database."`
	LogLevel    string `name:"log-level" env:"TOLLGATE_LOG_LEVEL" default:"info" help:"debug, info, warn or error."`
	LogFormat   string `name:"log-format" env:"TOLLGATE_LOG_FORMAT" default:"text" help:"text or json."`
}

func (c dbConfig) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(c.LogFormat) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", c.LogFormat)
}

func (c dbConfig) open(ctx context.Context, log *slog.Logger) (*storage.DB, error) {
	return storage.Open(ctx, storage.Opts{URL: c.DatabaseURL, DataDir: c.DataDir, Log: log})
}

// where describes the database without its password.
func (c dbConfig) where() string {
	if c.DatabaseURL == "" {
		return "embedded database in " + c.DataDir
	}
	u := c.DatabaseURL
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if i := strings.Index(u, "://"); i >= 0 && i < at {
			u = u[:i+3] + "…" + u[at:]
		}
	}
	return "PostgreSQL at " + u
}

// flagDefaults are the defaults of the flags that are the embedding
// package's (and domain's) defaults, for the flags' default tags.
func flagDefaults() kong.Vars {
	return kong.Vars{
		"defaultDataDir":            tollgate.DefaultDataDir,
		"defaultCheckpointLimit":    strconv.Itoa(domain.DefaultCheckpointLimit),
		"defaultDigestHour":         strconv.Itoa(mail.DefaultDigestHour),
		"defaultJobLease":           tollgate.DefaultJobLease.String(),
		"defaultKeyCacheTTL":        tollgate.DefaultKeyCacheTTL.String(),
		"defaultMaxBody":            strconv.Itoa(tollgate.DefaultMaxBody),
		"defaultMaxWait":            flow.DefaultMaxWait.String(),
		"defaultMaxWaitsPerCaller":  strconv.Itoa(tollgate.DefaultMaxWaitsPerCaller),
		"defaultPollInterval":       tollgate.DefaultPollInterval.String(),
		"defaultRetention":          tollgate.DefaultRetention.String(),
		"defaultSessionIdle":        tollgate.DefaultSessionIdle.String(),
		"defaultSessionMax":         tollgate.DefaultSessionMax.String(),
		"defaultShutdownTimeout":    tollgate.DefaultShutdownTimeout.String(),
		"defaultSyncTimeout":        tollgate.DefaultSyncTimeout.String(),
		"defaultUploadLimit":        strconv.Itoa(tollgate.DefaultUploadLimit),
		"defaultUploadRequestLimit": strconv.Itoa(tollgate.DefaultUploadRequestLimit),
		"defaultUploadsInFlight":    strconv.Itoa(tollgate.DefaultUploadsInFlight),
		"defaultUploadsPerUser":     strconv.Itoa(tollgate.DefaultUploadsPerUser),
		"defaultWorkers":            strconv.Itoa(tollgate.DefaultWorkers),
	}
}
