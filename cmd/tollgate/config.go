package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/storage"
)

// dbConfig is what every command needs to reach the database.
type dbConfig struct {
	dataDir     string
	databaseURL string
	logLevel    string
	logFormat   string
}

// envFlags registers flags whose defaults come from TOLLGATE_* variables
// (a flag on the command line wins over the environment).
type envFlags struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
}

func newFlags(name string, getenv func(string) string, out io.Writer) *envFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage of %s:\n", name)
		printFlags(fs, out)
	}
	return &envFlags{fs: fs, getenv: getenv}
}

func (f *envFlags) String(p *string, name, env, def, help string) {
	if v := f.getenv(env); v != "" {
		def = v
	}
	f.fs.StringVar(p, name, def, help+" ($"+env+")")
}

func (f *envFlags) Int(p *int, name, env string, def int, help string) {
	if v := f.getenv(env); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("$%s: %q is not an integer", env, v))
		}
		def = n
	}
	f.fs.IntVar(p, name, def, help+" ($"+env+")")
}

func (f *envFlags) Duration(p *time.Duration, name, env string, def time.Duration, help string) {
	if v := f.getenv(env); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("$%s: %q is not a duration like 30s", env, v))
		}
		def = d
	}
	f.fs.DurationVar(p, name, def, help+" ($"+env+")")
}

func (f *envFlags) Bool(p *bool, name, env string, help string) {
	f.BoolDefault(p, name, env, false, help)
}

// BoolDefault is Bool with the default def.
func (f *envFlags) BoolDefault(p *bool, name, env string, def bool, help string) {
	if v := f.getenv(env); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("$%s: %q is not true or false", env, v))
		}
		def = b
	}
	f.fs.BoolVar(p, name, def, help+" ($"+env+")")
}

// printFlags lists the flags as the documentation writes them (--addr), where
// flag.PrintDefaults would write -addr.
func printFlags(fs *flag.FlagSet, out io.Writer) {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	lines := strings.SplitAfter(b.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  -") {
			lines[i] = "  --" + l[3:]
		}
	}
	fmt.Fprint(out, strings.Join(lines, ""))
}

func (f *envFlags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if len(f.errs) > 0 {
		return usageError{f.errs[0]}
	}
	if f.fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", f.fs.Arg(0))}
	}
	return nil
}

func (f *envFlags) db(c *dbConfig) {
	f.String(&c.dataDir, "data", "TOLLGATE_DATA", tollgate.DefaultDataDir, "folder of the embedded database (tollgate.db)")
	c.databaseURL = f.getenv("DATABASE_URL")
	f.fs.StringVar(&c.databaseURL, "database-url", c.databaseURL, "postgres://… URL; selects PostgreSQL instead of the embedded database ($DATABASE_URL)")
	f.String(&c.logLevel, "log-level", "TOLLGATE_LOG_LEVEL", "info", "debug, info, warn or error")
	f.String(&c.logFormat, "log-format", "TOLLGATE_LOG_FORMAT", "text", "text or json")
}

func (c dbConfig) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(c.logFormat) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", c.logFormat)
}

func (c dbConfig) open(ctx context.Context, log *slog.Logger) (*storage.DB, error) {
	return storage.Open(ctx, storage.Opts{URL: c.databaseURL, DataDir: c.dataDir, Log: log})
}

// where describes the database without its password.
func (c dbConfig) where() string {
	if c.databaseURL == "" {
		return "embedded database in " + c.dataDir
	}
	u := c.databaseURL
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if i := strings.Index(u, "://"); i >= 0 && i < at {
			u = u[:i+3] + "…" + u[at:]
		}
	}
	return "PostgreSQL at " + u
}
