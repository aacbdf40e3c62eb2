package flow_test

import (
	"context"
	"log"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

// startPayment stands in for the payment provider, which calls the
// resume URL when the customer has paid.
func startPayment(ctx context.Context, resumeURL string) error { return nil }

// A task handler pauses its step until someone calls a resume URL: it
// makes a webhook waitpoint, hands its URL to whoever will call back, and
// returns WaitForWaitpoint. When the call comes, the handler runs again
// with the call as its ResumePayload, and what it returns then is the
// step's output.
func ExampleTaskRequest_CreateWaitpoint() {
	charge := func(ctx context.Context, req flow.TaskRequest) (any, error) {
		if req.ExecutionType == flow.ExecutionResume {
			return req.ResumePayload.Body, nil // the call's {method, body, headers, queryParams}
		}
		wp, err := req.CreateWaitpoint(ctx, flow.WaitpointSpec{Type: domain.WaitpointWebhook})
		if err != nil {
			return nil, err
		}
		if err := startPayment(ctx, wp.ResumeURL); err != nil {
			return nil, err // the step's retry policy decides; the waitpoint stays the same
		}
		return flow.WaitForWaitpoint(wp), nil
	}

	tasks := flow.NewTasks()
	if err := tasks.Register("charge", charge); err != nil {
		log.Fatal(err)
	}
}
