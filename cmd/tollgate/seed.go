package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// seedCLI is tollgate seed.
type seedCLI struct {
	dbConfig
	Suspensions int           `default:"1000" help:"How many suspended runs to create."`
	Founders    int           `default:"20" help:"Documentation requests are assigned to founder-1@example.com … founder-N@example.com."`
	Spread      time.Duration `default:"720h" help:"The oldest suspension has waited this long."`
}

func (c *seedCLI) Run(e *cmdEnv) error { return seedCmd(e.ctx, c, e.stdout, e.stderr) }

// seedCmd fills a database with suspended runs of the example workflows:
// founders' documentation requests and expense approvals, waiting from a
// few seconds to --spread. A few template runs go through the engine, so
// their rows are exactly what the engine writes; the rest are copies of
// them made in SQL, which is what makes a million runs affordable.
func seedCmd(ctx context.Context, c *seedCLI, stdout, stderr io.Writer) error {
	n, founders, spread := c.Suspensions, c.Founders, c.Spread
	if n < 1 || founders < 1 || spread < 0 {
		return usageError{errors.New("--suspensions and --founders must be positive, --spread not negative")}
	}
	db, err := c.openFor(ctx, stderr)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	start := time.Now()
	templates, err := seedTemplates(ctx, db, min(n, founders+expenseTemplates), founders)
	if err != nil {
		return err
	}
	copies := n - len(templates)
	fmt.Fprintf(stdout, "Ran %d template runs through the engine; copying them %d times…\n", len(templates), copies)
	// A line about every tenth of the copies, whatever the batch size.
	report := max(copies/10, 10_000)
	next := report
	err = db.CloneSuspendedRuns(ctx, storage.CloneOpts{Templates: templates, N: copies, Now: time.Now(), Spread: spread,
		Progress: func(done int) {
			if done >= next || done == copies {
				fmt.Fprintf(stdout, "  %d runs (%s)\n", done, time.Since(start).Round(time.Second))
				next = (done/report + 1) * report
			}
		}})
	if err != nil {
		return err
	}
	if _, err := db.CompactCounts(ctx); err != nil {
		return err
	}
	if err := db.Analyze(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Seeded %d suspended runs in %s.\n", n, time.Since(start).Round(time.Second))
	return nil
}

// expenseTemplates is how many expense approvals seedTemplates runs.
const expenseTemplates = 5

// seedTemplates runs up to n example runs through the engine until each is
// suspended: a documentation request for each founder first, then expense
// approvals. It returns their ids.
func seedTemplates(ctx context.Context, db *storage.DB, n, founders int) ([]string, error) {
	reg := domain.NewRegistry()
	if err := stepExamples(reg); err != nil {
		return nil, err
	}
	eng := engine.New(db, reg, engine.Opts{Log: slog.New(slog.DiscardHandler)})
	var ids []string
	for i := range n {
		wf, input := "expense-approval", any(expenseInput{Amount: float64(40 + 35*i), Description: fmt.Sprintf("Conference travel, batch %d", i),
			Requester: fmt.Sprintf("staff-%d@example.com", i+1), SubmittedOn: time.Now().AddDate(0, 0, -i).Format(time.DateOnly)})
		if i < founders {
			wf, input = "claim-verification", claimInput{ClaimID: fmt.Sprintf("seed-%d", i+1), FounderEmail: fmt.Sprintf("founder-%d@example.com", i+1),
				ClaimText: fmt.Sprintf("Revenue grew %d%% year over year to $%d.%dM", 20+i*7%80, 1+i%9, i%10)}
		}
		in, err := json.Marshal(input)
		if err != nil {
			return nil, err
		}
		run, _, err := eng.Start(ctx, wf, in, "")
		if err != nil {
			return nil, err
		}
		if run, err = eng.Drive(ctx, run.ID); err != nil {
			return nil, err
		}
		if run.Status != domain.RunSuspended {
			return nil, fmt.Errorf("template run %s of %s is %s, not suspended", run.ID, run.WorkflowID, run.Status)
		}
		ids = append(ids, run.ID)
	}
	return ids, nil
}
