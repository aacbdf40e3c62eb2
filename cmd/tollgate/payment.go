package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// The payment-pipeline example is a replay workflow: plain Go that waits.
// Start it with {"userId": "u-1", "amount": 120}; it pauses until a
// "payment" signal comes (POST /api/v1/runs/{runId}/signals with
// {"name": "payment", "signalId": "…", "payload": {"amount": 120,
// "reference": "…"}}) or a day passes, then asks a reviewer to approve
// the payout in the web app, and finalizes.

type paymentInput struct {
	UserID string `json:"userId"`
	Amount int    `json:"amount"`
	// Currency is the amounts' ISO 4217 code (EUR when absent).
	Currency string `json:"currency,omitempty"`
	// PaymentTimeoutMinutes bounds the wait for the payment (a day).
	PaymentTimeoutMinutes int `json:"paymentTimeoutMinutes,omitempty"`
}

// money is the field format of the run's amounts, with their currency.
func (in paymentInput) money() domain.FieldFormat {
	return domain.FieldFormat(string(domain.FormatMoney) + ":" + in.currency())
}

// amount writes n in the run's currency for a title or a sentence, which
// are fixed when the request is made: "120 EUR".
func (in paymentInput) amount(n int) string { return strconv.Itoa(n) + " " + in.currency() }

func (in paymentInput) currency() string {
	if in.Currency == "" {
		return "EUR"
	}
	return in.Currency
}

type paymentUser struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Tier  string `json:"tier"`
}

type paymentSignal struct {
	Amount    int    `json:"amount"`
	Reference string `json:"reference"`
}

type paymentOutcome struct {
	Status     string    `json:"status"` // paid, rejected, expired
	User       string    `json:"user"`
	Amount     int       `json:"amount,omitempty"`
	Reference  string    `json:"reference,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	DecidedBy  string    `json:"decidedBy,omitempty"`
	Feedback   string    `json:"feedback,omitempty"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// paymentUsers stands in for the user service a real pipeline would call
// from its fetch-user step.
var paymentUsers = map[string]paymentUser{
	"u-1": {ID: "u-1", Name: "Ada Lovelace", Email: "ada@example.com", Tier: "pro"},
	"u-2": {ID: "u-2", Name: "Alan Turing", Email: "alan@example.com", Tier: "free"},
}

func paymentPipeline() *replay.Definition {
	return replay.Workflow("payment-pipeline", "1", func(c *replay.Context, in paymentInput) (paymentOutcome, error) {
		u, err := replay.Step(c, "fetch-user", func(context.Context) (paymentUser, error) {
			u, ok := paymentUsers[in.UserID]
			if !ok {
				return u, &replay.StepError{Code: "unknown_user", Message: fmt.Sprintf("no user %q (the example knows u-1 and u-2)", in.UserID)}
			}
			return u, nil
		})
		if err != nil {
			return paymentOutcome{}, err
		}
		started, err := c.Now()
		if err != nil {
			return paymentOutcome{}, err
		}
		out := paymentOutcome{User: u.ID, StartedAt: started}
		timeout := 24 * time.Hour
		if in.PaymentTimeoutMinutes > 0 {
			timeout = time.Duration(in.PaymentTimeoutMinutes) * time.Minute
		}
		if err := errors.Join(c.Emit("awaiting-payment", map[string]any{"user": u.ID, "amount": in.Amount}), c.SetState("stage", "awaiting payment")); err != nil {
			return out, err
		}
		p, err := replay.WaitForEvent[paymentSignal](c, "payment", replay.WithID("payment"), replay.Timeout(timeout),
			replay.WithPresentation(domain.Presentation{Title: fmt.Sprintf("Payment from %s", u.Name), ReasonLabel: "Payment awaited",
				Fields: []domain.Field{domain.NewField("Expected", in.Amount, in.money()), domain.NewField("Customer", u.Email, domain.FormatEmail)}}))
		if err == replay.ErrTimeout {
			out.Status = "expired"
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out.Amount, out.Reference = p.Amount, p.Reference
		if err := c.SetState("stage", "awaiting approval"); err != nil {
			return out, err
		}
		d, err := c.Approve(replay.ApproveOptions{ID: "payout-approval", Title: fmt.Sprintf("Pay out %s to %s?", in.amount(p.Amount), u.Name),
			Description: fmt.Sprintf("%s (%s, %s tier) paid %s, reference %q; %s was expected.", u.Name, u.Email, u.Tier, in.amount(p.Amount), p.Reference, in.amount(in.Amount)),
			ReasonLabel: "Payout approval",
			Fields: []domain.Field{domain.NewField("Paid", p.Amount, in.money()), domain.NewField("Expected", in.Amount, in.money()),
				domain.NewField("Reference", p.Reference, domain.FormatText), domain.NewField("Customer", u.Email, domain.FormatEmail)}})
		if err != nil {
			return out, err
		}
		out.DecidedBy, out.Feedback = d.By, d.Feedback
		if !d.Approved {
			out.Status = "rejected"
			return out, nil
		}
		return replay.Step(c, "finalize", func(context.Context) (paymentOutcome, error) {
			out.Status = "paid"
			out.FinishedAt = time.Now().UTC().Truncate(time.Millisecond)
			return out, nil
		})
	})
}

// replayExamples registers the replay examples.
func replayExamples(tg *tollgate.Tollgate) error {
	return tg.RegisterReplay(paymentPipeline())
}
