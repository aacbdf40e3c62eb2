package domain

import (
	"context"
	"time"
)

// SlackMessage is one Slack message about one request: in a channel, or
// to one person (DM, Target is their email). The mail dispatcher's
// fan-out makes one when the request's commit is taken from the outbox
// (see SlackStore). ChannelID and TS name it once posted; ShownStatus and
// ShownVotes are what it last said of its request.
type SlackMessage struct {
	ID         int64
	Attempt    int
	Target     string
	DM         bool
	Suspension Suspension
	ChannelID  string
	TS         string
	// ShownStatus and ShownVotes are the request's status and number of
	// votes when the message was last written.
	ShownStatus SuspensionStatus
	ShownVotes  int
	GiveUpAt    time.Time
}

// SlackOutcome is what became of a claimed message: posted (ChannelID,
// TS and what it shows), to be tried again at RetryAt, or given up
// (Failed) with Error; or, with Update, of a posted message written again:
// Posted when it now shows ShownStatus and ShownVotes, else to be written
// again at RetryAt, or never (Failed: Slack cannot update it).
type SlackOutcome struct {
	ID          int64
	Attempt     int
	Update      bool
	Posted      bool
	ChannelID   string
	TS          string
	ShownStatus SuspensionStatus
	ShownVotes  int
	RetryAt     time.Time
	Failed      bool
	Error       string
}

// SlackStore keeps the Slack messages of requests (storage.DB).
type SlackStore interface {
	// ClaimSlack claims up to limit messages due at now (queued, or left
	// by a poster whose lease ran out) for worker until now+lease, with
	// their requests and votes.
	ClaimSlack(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]SlackMessage, error)
	// StaleSlack returns up to limit posted messages whose request's
	// status or votes differ from what they show, with the request, those
	// whose last update failed once their retry is due at now.
	StaleSlack(ctx context.Context, now time.Time, limit int) ([]SlackMessage, error)
	// FinishSlack records outcomes.
	FinishSlack(ctx context.Context, outcomes []SlackOutcome, now time.Time) error
	// SlackMessagesOf returns the posted messages of a request.
	SlackMessagesOf(ctx context.Context, suspensionID string) ([]SlackMessage, error)
}
