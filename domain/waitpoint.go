package domain

import (
	"context"
	"encoding/json"
	"time"
)

// WaitpointType says what completes a waitpoint.
type WaitpointType string

// Waitpoint types.
const (
	WaitpointDelay   WaitpointType = "DELAY"   // a timer, at ResumeAt
	WaitpointWebhook WaitpointType = "WEBHOOK" // any HTTP call to its resume URL
)

// WaitpointStatus is pending until the resume arrives, then completed
// (the seed's PENDING and COMPLETED, in the API's lower case).
type WaitpointStatus string

// Waitpoint statuses.
const (
	WaitpointPending   WaitpointStatus = "pending"
	WaitpointCompleted WaitpointStatus = "completed"
)

// Waitpoint is a step's registered wait: the durable row a resume call is
// checked against, written before the step's pause commits. The pause is
// the suspension whose step key is the waitpoint's ID; the waitpoint's
// status is that suspension's.
type Waitpoint struct {
	ID       string
	RunID    string
	StepName string
	// ExecutionKey is the step execution that created it; creating a
	// waitpoint again in the same execution (a retried attempt) returns
	// the first one.
	ExecutionKey string
	Type         WaitpointType
	// TokenHash is the SHA-256 of the resume URL's token (WEBHOOK only).
	TokenHash      []byte
	ResumeAt       *time.Time
	ResponseToSend *HTTPResponse
	CreatedAt      time.Time

	Status WaitpointStatus
	// Paused is true once the step's pause has committed.
	Paused bool
}

// HTTPResponse is an HTTP answer a workflow gives: a waitpoint's
// responseToSend. A string body is sent as text; any other JSON value as
// JSON.
type HTTPResponse struct {
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// HTTPCall is an HTTP request as a workflow receives it: the resume payload
// of a waitpoint, the input of a run started by a webhook. A JSON body is
// kept as JSON, text as a string, anything else as base64 with
// BodyEncoding "base64".
type HTTPCall struct {
	// Method is empty for a timer's resume, which no call made.
	Method       string            `json:"method,omitempty"`
	Body         json.RawMessage   `json:"body"`
	BodyEncoding string            `json:"bodyEncoding,omitempty"`
	Headers      map[string]string `json:"headers"`
	QueryParams  map[string]string `json:"queryParams"`
}

// WaitpointStore keeps waitpoints.
type WaitpointStore interface {
	// CreateWaitpoint inserts w, or returns the waitpoint its execution
	// created before.
	CreateWaitpoint(ctx context.Context, w Waitpoint) (Waitpoint, error)
	// Waitpoint returns one waitpoint of a run, or ErrNotFound.
	Waitpoint(ctx context.Context, runID, id string) (Waitpoint, error)
	// Waitpoints returns a run's waitpoints, oldest first.
	Waitpoints(ctx context.Context, runID string) ([]Waitpoint, error)
}
