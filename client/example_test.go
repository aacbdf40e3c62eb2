package client_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tollgatehq/tollgate/client"
)

// A program starts a run, waits for it to pause, approves what it asks
// and waits for its end. TOLLGATE_URL and TOLLGATE_API_KEY name the
// server and a key, as they do for the CLI.
func Example() {
	ctx := context.Background()
	c := client.New(os.Getenv("TOLLGATE_URL"), os.Getenv("TOLLGATE_API_KEY"), client.WithRetries(3))

	run, err := c.StartRun(ctx, "expense-approval",
		map[string]any{"amount": 120.5, "description": "Conference ticket", "requester": "rita@example.com"},
		client.IdempotencyKey("expense-2026-0042")) // sent again, it starts nothing new
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Wait(ctx, run.ID, "suspended"); err != nil {
		log.Fatal(err)
	}
	for s, err := range c.AllSuspensions(ctx, client.SuspensionFilter{RunID: run.ID, Status: "pending"}) {
		if err != nil {
			log.Fatal(err)
		}
		_, err := c.Approve(ctx, s.ID, "Within budget")
		switch {
		case client.IsProblem(err, "already_resumed"):
			fmt.Printf("%s was decided by someone else\n", s.Title)
		case err != nil:
			log.Fatal(err)
		}
	}
	run, err = c.Wait(ctx, run.ID) // until it succeeds, fails or is cancelled
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, string(run.Output))
}
