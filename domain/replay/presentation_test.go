package replay_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// Approve's title, fields and reason label go on the suspension it pauses
// with, fields in order and their values as given.
func TestApproveCarriesItsPresentation(t *testing.T) {
	t.Parallel()
	res, _ := invoke(t, func(c *replay.Context, _ struct{}) (any, error) {
		return c.Approve(replay.ApproveOptions{ID: "payout", Title: "Pay out €120.00 to Ada?", ReasonLabel: "Payout approval",
			Fields: []domain.Field{domain.NewField("Amount", json.RawMessage(`120.00`), "money:EUR"), domain.NewField("User", "ada@example.com", domain.FormatEmail)}})
	})
	cmd := onlyCommand(t, res)
	if cmd.Type != domain.CmdReview || cmd.Title != "Pay out €120.00 to Ada?" || cmd.ReasonLabel != "Payout approval" ||
		fieldsJSON(cmd.Fields) != `[{"label":"Amount","value":120.00,"format":"money:EUR"},{"label":"User","value":"ada@example.com","format":"email"}]` {
		t.Fatalf("command %+v (fields %s)", cmd, fieldsJSON(cmd.Fields))
	}
}

// WaitForEvent takes a presentation as an option; it goes on the
// suspension and stays out of the checkpoint. Without one, the wait has
// none.
func TestWaitForEventCarriesItsPresentation(t *testing.T) {
	t.Parallel()
	res, _ := invoke(t, func(c *replay.Context, _ struct{}) (any, error) {
		return replay.WaitForEvent[json.RawMessage](c, "payment", replay.WithPresentation(domain.Presentation{
			Title: "Payment for order 42", ReasonLabel: "Payment due", Fields: []domain.Field{domain.NewField("Order", 42, domain.FormatNumber)}}))
	})
	cmd := onlyCommand(t, res)
	if cmd.Kind != domain.KindSignal || cmd.Title != "Payment for order 42" || cmd.ReasonLabel != "Payment due" ||
		fieldsJSON(cmd.Fields) != `[{"label":"Order","value":42,"format":"number"}]` {
		t.Fatalf("command %+v", cmd)
	}
	if b, _ := json.Marshal(cmd.Checkpoint); strings.Contains(string(b), "Payment") {
		t.Errorf("the checkpoint holds the presentation: %s", b)
	}
	plain, _ := invoke(t, func(c *replay.Context, _ struct{}) (any, error) {
		return replay.WaitForEvent[json.RawMessage](c, "payment")
	})
	if cmd := onlyCommand(t, plain); cmd.Title != "" || cmd.Fields != nil || cmd.ReasonLabel != "" {
		t.Fatalf("a wait without a presentation: %+v", cmd)
	}
}

func onlyCommand(t *testing.T, res domain.StepResult) domain.Command {
	t.Helper()
	if len(res.Commands) != 1 {
		t.Fatalf("commands %+v", res.Commands)
	}
	return res.Commands[0]
}

func fieldsJSON(fs []domain.Field) string {
	b, _ := json.Marshal(fs)
	return string(b)
}

// Approve's policy goes on the suspension it pauses with, as the Go step
// option and the declarative step carry it.
func TestApproveCarriesItsPolicy(t *testing.T) {
	t.Parallel()
	p := domain.ApprovalPolicy{Quorum: 2, Rejections: 1, SeparationOfDuties: true, RequesterPointer: "/vendor/email", RejectRequiresComment: true,
		Escalation: []domain.Rung{{AfterMs: 3_600_000, Remind: true}}}
	res, _ := invoke(t, func(c *replay.Context, _ struct{}) (any, error) {
		return c.Approve(replay.ApproveOptions{ID: "payout", Title: "Pay out?", Role: domain.RoleReviewer, ApprovalPolicy: p})
	})
	if cmd := onlyCommand(t, res); cmd.Policy == nil || !reflect.DeepEqual(*cmd.Policy, p) {
		t.Fatalf("command %+v; want policy %+v", cmd, p)
	}
	plain, _ := invoke(t, func(c *replay.Context, _ struct{}) (any, error) {
		return c.Approve(replay.ApproveOptions{ID: "payout", Title: "Pay out?"})
	})
	if cmd := onlyCommand(t, plain); cmd.Policy != nil {
		t.Fatalf("an approval without a policy carries %+v", cmd.Policy)
	}
}
