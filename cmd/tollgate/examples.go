package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
)

// registerWorkflows registers what serve runs: the examples. Tests
// replace it to add workflows of their own.
var registerWorkflows = registerExamples

// registerExamples adds the workflows a new server ships with, so a
// newcomer sees real suspensions at once.
func registerExamples(tg *tollgate.Tollgate) error {
	return errors.Join(stepExamples(tg.Registry()), replayExamples(tg))
}

// stepExamples are the examples made of step functions, which seed runs.
func stepExamples(reg *domain.Registry) error {
	return errors.Join(reg.Register(claimVerification()), reg.Register(expenseApproval()))
}

type claimInput struct {
	ClaimID      string `json:"claimId"`
	ClaimText    string `json:"claimText"`
	FounderEmail string `json:"founderEmail"`
}

type claimCheckpoint struct {
	ClaimID          string `json:"claimId"`
	ClaimText        string `json:"claimText"`
	RequestedDocType string `json:"requestedDocType"`
}

var documentationSchema = json.RawMessage(`{
  "type": "object",
  "required": ["documentIds"],
  "additionalProperties": false,
  "properties": {
    "documentIds": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                    "description": "Ids of documents uploaded to this request that back the claim; ids of documents not uploaded to it are refused (unknown_document)"},
    "note": {"type": "string", "description": "Anything the reviewer should know"}
  }
}`)

// claimVerification verifies a founder's claim. A claim that states figures
// needs documentation: the run suspends until the founder uploads it, then
// handleDocumentation decides. The engine lets the resume name only
// documents uploaded to this suspension, so "verified" always rests on
// real files.
func claimVerification() *domain.Workflow {
	return domain.NewWorkflow("claim-verification", "1").
		Step("verifyClaim", verifyClaim, domain.WithRetry(domain.RetryPolicy{MaxAttempts: 3, InitialBackoff: 500e6, MaxBackoff: 10e9, Multiplier: 2, Jitter: 0.2})).
		Step("handleDocumentation", handleDocumentation)
}

func verifyClaim(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
	var in claimInput
	if err := req.Bind(&in); err != nil {
		return domain.StepResult{}, err
	}
	if in.ClaimID == "" || strings.TrimSpace(in.ClaimText) == "" {
		return domain.StepResult{Commands: []domain.Command{domain.Fail("invalid_input", "claimId and claimText are required")}}, nil
	}
	if !strings.ContainsFunc(in.ClaimText, unicode.IsDigit) {
		return domain.StepResult{Output: map[string]string{"claimId": in.ClaimID, "verdict": "verified", "method": "no_figures_stated"}}, nil
	}
	return domain.StepResult{
		Output: map[string]string{"status": "awaiting_input"},
		Events: []domain.StepEvent{{Type: "verification_suspended", Payload: map[string]string{"claimId": in.ClaimID}}},
		Commands: []domain.Command{domain.Suspend("awaiting_documentation",
			claimCheckpoint{ClaimID: in.ClaimID, ClaimText: in.ClaimText, RequestedDocType: "financial_statement"},
			"handleDocumentation", domain.WithAssignee(in.FounderEmail), domain.WithResumeSchema(documentationSchema),
			domain.WithDocuments("application/pdf", "image/png", "image/jpeg"),
			domain.WithTitle("Documents for: "+clip(in.ClaimText, 60),
				"Upload a financial statement (PDF, PNG or JPEG) that shows the figures in your claim."),
			domain.WithPresentation(domain.Presentation{ReasonLabel: "Documents needed", Fields: []domain.Field{
				domain.NewField("Claim", in.ClaimText, domain.FormatText),
				domain.NewField("Founder", in.FounderEmail, domain.FormatEmail),
				domain.NewField("Document asked for", "Financial statement", domain.FormatText),
			}}))},
	}, nil
}

// clip shortens s to at most n characters for a title, ending it with an
// ellipsis when it was cut.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return s
}

func handleDocumentation(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
	var in struct {
		Checkpoint claimCheckpoint `json:"checkpoint"`
		ResumeData struct {
			DocumentIDs []string `json:"documentIds"`
			Note        string   `json:"note"`
		} `json:"resumeData"`
	}
	if err := req.Bind(&in); err != nil {
		return domain.StepResult{}, err
	}
	verdict := "verified"
	if len(in.ResumeData.DocumentIDs) == 0 {
		verdict = "unverified"
	}
	return domain.StepResult{Commands: []domain.Command{domain.Complete(map[string]any{
		"claimId": in.Checkpoint.ClaimID, "verdict": verdict, "method": "documentation",
		"documentType": in.Checkpoint.RequestedDocType, "documentIds": in.ResumeData.DocumentIDs,
	})}}, nil
}

type expenseInput struct {
	Amount      float64 `json:"amount"`
	Description string  `json:"description"`
	// Requester (an email) and SubmittedOn (a date, 2026-04-15) are
	// shown to the reviewer when given.
	Requester   string `json:"requester,omitempty"`
	SubmittedOn string `json:"submittedOn,omitempty"`
}

// expenseApproval asks a reviewer to approve an expense. The reimbursement
// is a sibling of the review: deferred until approval, dropped on rejection
// (which fails the run with code "rejected").
func expenseApproval() *domain.Workflow {
	return domain.NewWorkflow("expense-approval", "1").
		Step("submitExpense", submitExpense).
		Step("reimburse", reimburse)
}

func submitExpense(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
	var in expenseInput
	if err := req.Bind(&in); err != nil {
		return domain.StepResult{}, err
	}
	if in.Amount <= 0 || strings.TrimSpace(in.Description) == "" {
		return domain.StepResult{Commands: []domain.Command{domain.Fail("invalid_input", "amount must be positive and description given")}}, nil
	}
	return domain.StepResult{
		Output: map[string]any{"status": "awaiting_approval"},
		Commands: []domain.Command{
			domain.Review("awaiting_approval", in, domain.WithPresentation(expensePresentation(in))),
			domain.Invoke("reimburse", in),
		},
	}, nil
}

// expensePresentation is how a reviewer sees an expense: its description
// and amount (in euros), who asked and when.
func expensePresentation(in expenseInput) domain.Presentation {
	p := domain.Presentation{
		Title:       fmt.Sprintf("Expense: %s — €%.2f", clip(in.Description, 60), in.Amount),
		ReasonLabel: "Expense approval",
		Fields:      []domain.Field{domain.NewField("Amount", in.Amount, "money:EUR")},
	}
	if in.Requester != "" {
		p.Fields = append(p.Fields, domain.NewField("Requester", in.Requester, domain.FormatEmail))
	}
	if in.SubmittedOn != "" {
		p.Fields = append(p.Fields, domain.NewField("Submitted", in.SubmittedOn, domain.FormatDate))
	}
	return p
}

func reimburse(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
	var in expenseInput
	if err := req.Bind(&in); err != nil {
		return domain.StepResult{}, err
	}
	return domain.StepResult{Commands: []domain.Command{domain.Complete(map[string]any{
		"reimbursed": in.Amount, "description": in.Description, "reference": "reimb-" + req.RunID,
	})}}, nil
}
