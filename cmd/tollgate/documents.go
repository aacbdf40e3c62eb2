package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

// exampleDocuments are the declarative workflows a new server ships with,
// and under examples/former/NAME/ the texts of example NAME.json that
// older builds shipped under the same id and version.
//
//go:embed examples/*.json examples/former
var exampleDocuments embed.FS

// registerTasks adds the task handlers documents may name. Tests replace
// it to add handlers of their own.
var registerTasks = registerExampleTasks

func registerExampleTasks(tg *tollgate.Tollgate, log *slog.Logger) error {
	return tg.RegisterTask("sendEmail", sendEmail(log))
}

// sendEmail is the drip-campaign example's task. Tollgate has no mail
// transport, so it writes the email it stands for to the server log and
// says so in its output; a program embedding Tollgate registers a
// sendEmail that delivers.
func sendEmail(log *slog.Logger) flow.TaskFunc {
	return func(ctx context.Context, req flow.TaskRequest) (any, error) {
		var cfg struct {
			Template string `json:"template"`
		}
		var in struct {
			Email string `json:"email"`
		}
		if len(req.Config) > 0 {
			if err := json.Unmarshal(req.Config, &cfg); err != nil {
				return nil, fmt.Errorf("sendEmail config: %w", err)
			}
		}
		_ = json.Unmarshal(req.Input, &in)
		if in.Email == "" {
			// Fails the run at once: another attempt would have no email either.
			return nil, &domain.ValidationError{Code: domain.CodeValidation, Message: `sendEmail: the run input has no email; start the run with {"email": "…"}`}
		}
		log.InfoContext(ctx, "Email written to the log (no mail transport is configured)", "run_id", req.RunID, "step", req.Step,
			"to", in.Email, "template", cfg.Template, "idempotency_key", req.IdempotencyKey)
		return map[string]any{"to": in.Email, "template": cfg.Template, "delivery": "log", "at": time.Now().UTC()}, nil
	}
}

// loadDocuments registers every *.json in dir (when set), then the
// example documents. A document of dir that does not validate stops the
// server: it would otherwise be missing without anyone noticing. An
// example is a convenience, not the operator's choice: it yields to a
// document registered before under its id and version, from dir or the
// API, so the operator's document is the one that runs; and one that
// does not fit this server's configuration (a wait longer than
// --max-wait, a task handler this server lacks) is skipped with a
// warning that says why, rather than stopping a server whose settings
// are the operator's to choose.
func loadDocuments(ctx context.Context, tg *tollgate.Tollgate, dir string) error {
	if dir != "" {
		if err := tg.LoadDocuments(ctx, dir); err != nil {
			return err
		}
	}
	catalog, log := tg.Catalog(), tg.Log()
	names, err := fs.Glob(exampleDocuments, "examples/*.json")
	if err != nil {
		return err
	}
	for _, name := range names {
		body, err := exampleDocuments.ReadFile(name)
		if err != nil {
			return err
		}
		_, err = catalog.Register(ctx, body, "example")
		if _, taken := errors.AsType[*domain.ConflictError](err); taken {
			err = supersedeExample(ctx, catalog, name, body, log)
		}
		if invalid, misfit := errors.AsType[*flow.InvalidError](err); misfit {
			log.WarnContext(ctx, "Example workflow skipped: it does not fit this server's configuration; runs of it cannot start or continue here",
				"file", path.Base(name), "problems", invalid.Error())
			continue
		}
		if err != nil {
			return fmt.Errorf("example workflow %s: %w", path.Base(name), err)
		}
	}
	return nil
}

// supersedeExample handles an example whose id and version hold another
// document. When that document is this example as an older build shipped
// it (registered by "example", so by no operator), it is replaced by this
// build's text: otherwise the text this build documents, which the seeds
// write, would be refused with 409 on the very database the older build
// seeded. Anything else is an operator's document, and the example yields.
func supersedeExample(ctx context.Context, catalog *flow.Catalog, name string, body []byte, log *slog.Logger) error {
	former, err := fs.Glob(exampleDocuments, "examples/former/"+strings.TrimSuffix(path.Base(name), ".json")+"/*.json")
	if err != nil {
		return err
	}
	var texts [][]byte
	for _, f := range former {
		text, err := exampleDocuments.ReadFile(f)
		if err != nil {
			return err
		}
		texts = append(texts, text)
	}
	replaced, err := catalog.Supersede(ctx, body, texts, "example")
	if err != nil {
		return err
	}
	if replaced {
		log.InfoContext(ctx, "Example workflow updated from an older build's text to this build's; its steps are unchanged", "file", path.Base(name))
		return nil
	}
	log.InfoContext(ctx, "Example workflow not loaded: its id and version hold another document", "file", path.Base(name))
	return nil
}
