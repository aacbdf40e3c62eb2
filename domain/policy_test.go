package domain_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func TestDecideVote(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	approval := func(p domain.ApprovalPolicy) *domain.Suspension {
		return &domain.Suspension{ID: "s1", RunID: "r1", StepKey: "sign-off", Kind: domain.KindApproval, Status: domain.SuspensionPending, Policy: p}
	}
	decide := func(by, decision, comment, key string) domain.ResumeRequest {
		return domain.ResumeRequest{SuspensionID: "s1", By: by, Decision: decision, RequestKey: key, Now: at,
			Data: domain.MustJSON(domain.ApprovalData{Approved: decision == domain.DecisionApproved, Comment: comment})}
	}
	vote := func(by, decision, comment, key string) domain.Vote {
		return domain.Vote{Voter: by, Decision: decision, Comment: comment, Channel: domain.ChannelAPI, At: at, RequestKey: key}
	}
	two := domain.ApprovalPolicy{Quorum: 2}
	tests := []struct {
		name  string
		req   domain.ResumeRequest
		s     *domain.Suspension
		votes []domain.Vote
		fate  domain.ResumeFate
		code  string // of the error refusing it
	}{
		{"one approval decides the default policy", decide("ann@x.test", domain.DecisionApproved, "", ""), approval(domain.ApprovalPolicy{}), nil, domain.ResumeApply, ""},
		{"the first of two approvals is kept", decide("ann@x.test", domain.DecisionApproved, "", ""), approval(two), nil, domain.ResumeVote, ""},
		{"the second approval decides", decide("bob@x.test", domain.DecisionApproved, "", ""), approval(two),
			[]domain.Vote{vote("ann@x.test", domain.DecisionApproved, "", "")}, domain.ResumeApply, ""},
		{"one rejection rejects a quorum of two", decide("bob@x.test", domain.DecisionRejected, "no", ""), approval(two), nil, domain.ResumeApply, ""},
		{"with two rejections needed, the first is kept", decide("bob@x.test", domain.DecisionRejected, "no", ""),
			approval(domain.ApprovalPolicy{Quorum: 2, Rejections: 2}), nil, domain.ResumeVote, ""},
		{"an approval does not count toward rejections", decide("cat@x.test", domain.DecisionApproved, "", ""),
			approval(domain.ApprovalPolicy{Quorum: 3, Rejections: 2}), []domain.Vote{vote("bob@x.test", domain.DecisionRejected, "no", "")}, domain.ResumeVote, ""},
		{"a second vote by the same person is refused", decide("ANN@x.test", domain.DecisionRejected, "changed my mind", ""), approval(two),
			[]domain.Vote{vote("ann@x.test", domain.DecisionApproved, "", "")}, 0, domain.CodeAlreadyVoted},
		{"the same request again is answered as before", decide("ann@x.test", domain.DecisionApproved, "", "k1"), approval(two),
			[]domain.Vote{vote("ann@x.test", domain.DecisionApproved, "", "k1")}, domain.ResumeRepeat, ""},
		{"the same key with another comment is a second vote", decide("ann@x.test", domain.DecisionApproved, "ok", "k1"), approval(two),
			[]domain.Vote{vote("ann@x.test", domain.DecisionApproved, "", "k1")}, 0, domain.CodeAlreadyVoted},
		{"a rejection without a comment is refused when one is required", decide("bob@x.test", domain.DecisionRejected, "  ", ""),
			approval(domain.ApprovalPolicy{RejectRequiresComment: true}), nil, 0, domain.CodeValidation},
		{"an approval needs no comment then", decide("bob@x.test", domain.DecisionApproved, "", ""),
			approval(domain.ApprovalPolicy{RejectRequiresComment: true}), nil, domain.ResumeApply, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fate, err := domain.DecideResume(tt.req, domain.ResumeFacts{RunStatus: domain.RunSuspended, Target: tt.s, Votes: tt.votes})
			if tt.code == "" {
				if err != nil || fate != tt.fate {
					t.Fatalf("DecideResume = %v, %v; want %v", fate, err, tt.fate)
				}
				return
			}
			var ce *domain.ConflictError
			var ve *domain.ValidationError
			switch {
			case errors.As(err, &ce) && ce.Code == tt.code:
			case errors.As(err, &ve) && ve.Code == tt.code:
				if len(ve.Fields) != 1 || ve.Fields[0].Field != "/comment" {
					t.Errorf("fields %+v; want /comment", ve.Fields)
				}
			default:
				t.Fatalf("DecideResume = %v, %v; want code %s", fate, err, tt.code)
			}
		})
	}
}

// A voter who lost the race to resolve the approval, sending the same
// vote again, is told they voted; another person is told it was decided.
func TestDecideVoteAfterTheDecision(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &domain.Suspension{ID: "s1", Kind: domain.KindApproval, Status: domain.SuspensionResumed, ResumedAt: &at, ResumedBy: "bob@x.test",
		Decision: domain.DecisionApproved, Policy: domain.ApprovalPolicy{Quorum: 2}}
	votes := []domain.Vote{{Voter: "ann@x.test", Decision: domain.DecisionApproved, At: at, RequestKey: "k1"}, {Voter: "bob@x.test", Decision: domain.DecisionApproved, At: at}}
	data := domain.MustJSON(domain.ApprovalData{Approved: true})
	for _, tt := range []struct {
		req  domain.ResumeRequest
		fate domain.ResumeFate
		code string
	}{
		{domain.ResumeRequest{SuspensionID: "s1", By: "ann@x.test", Decision: domain.DecisionApproved, RequestKey: "k1", Data: data}, domain.ResumeRepeat, ""},
		{domain.ResumeRequest{SuspensionID: "s1", By: "ann@x.test", Decision: domain.DecisionApproved, Data: data}, 0, domain.CodeAlreadyVoted},
		{domain.ResumeRequest{SuspensionID: "s1", By: "cat@x.test", Decision: domain.DecisionApproved, Data: data}, 0, domain.CodeAlreadyResumed},
	} {
		fate, err := domain.DecideResume(tt.req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: s, Votes: votes})
		var ce *domain.ConflictError
		if tt.code == "" && (err != nil || fate != tt.fate) || tt.code != "" && (!errors.As(err, &ce) || ce.Code != tt.code) {
			t.Errorf("%s votes %s again: %v, %v; want %v %s", tt.req.By, tt.req.RequestKey, fate, err, tt.fate, tt.code)
		}
	}
}

func TestCastVoteResolvesWithEveryVote(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	p := domain.ApprovalPolicy{Quorum: 2}
	req := domain.ResumeRequest{By: "Bob@X.test", Decision: domain.DecisionApproved, Now: at, Channel: domain.ChannelWeb,
		Data: domain.MustJSON(domain.ApprovalData{Approved: true, Comment: "fine"})}
	v, data := domain.CastVote(req, p, nil)
	if data != nil || v.Voter != "bob@x.test" || v.Channel != domain.ChannelWeb || v.Comment != "fine" {
		t.Fatalf("the first of two votes: %+v, %s; want kept, lower-cased, with its channel and comment", v, data)
	}
	_, data = domain.CastVote(req, p, []domain.Vote{{Voter: "ann@x.test", Decision: domain.DecisionApproved, Channel: domain.ChannelAPI, At: at}})
	var d domain.ApprovalData
	if err := json.Unmarshal(data, &d); err != nil || !d.Approved || d.Comment != "fine" || len(d.Votes) != 2 || d.Votes[1].Voter != "bob@x.test" {
		t.Fatalf("the deciding vote's data = %s (%v); want approved with its comment and both votes", data, err)
	}
}

func TestSeparationOfDuties(t *testing.T) {
	t.Parallel()
	p := domain.ApprovalPolicy{SeparationOfDuties: true, RequesterPointer: "/vendor/contact"}
	s := domain.Suspension{Kind: domain.KindApproval, RunStartedBy: "u-starter", Policy: p,
		Requesters: p.Requesters(json.RawMessage(`{"vendor":{"contact":"Vera@Vendor.test"}}`))}
	starter := domain.User{ID: "u-starter", Email: "sam@x.test", Role: domain.RoleReviewer}
	requester := domain.User{ID: "u-vera", Email: "vera@vendor.test", Role: domain.RoleReviewer}
	other := domain.User{ID: "u-ann", Email: "ann@x.test", Role: domain.RoleReviewer}
	for _, u := range []domain.User{starter, requester} {
		var de *domain.DutyError
		if err := s.CheckActor(u); !errors.Is(err, domain.ErrSeparationOfDuties) || !errors.As(err, &de) || de.Message == "" {
			t.Errorf("%s may decide: %v; want a separation-of-duties refusal that says why", u.Email, err)
		}
	}
	if err := s.CheckActor(other); err != nil {
		t.Errorf("another reviewer is refused: %v", err)
	}
	s.Policy.SeparationOfDuties = false
	if err := s.CheckActor(starter); err != nil {
		t.Errorf("without separation of duties the starter is refused: %v", err)
	}
	if got := p.Requesters(json.RawMessage(`{"vendor":{"contact":42}}`)); got != nil {
		t.Errorf("a pointer to a number found requesters %v", got)
	}
}

func TestApprovalPolicyCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		p     domain.ApprovalPolicy
		kind  domain.SuspensionKind
		field string
	}{
		{domain.ApprovalPolicy{Quorum: 2, Rejections: 2, SeparationOfDuties: true, RequesterPointer: "/a", RejectRequiresComment: true}, domain.KindApproval, ""},
		{domain.ApprovalPolicy{Quorum: -1}, domain.KindApproval, "quorum"},
		{domain.ApprovalPolicy{Rejections: 101}, domain.KindApproval, "rejections"},
		{domain.ApprovalPolicy{RequesterPointer: "a"}, domain.KindApproval, "requesterPointer"},
		{domain.ApprovalPolicy{Quorum: 2}, domain.KindInput, "quorum"},
		{domain.ApprovalPolicy{RejectRequiresComment: true}, domain.KindInput, "rejectRequiresComment"},
		{domain.ApprovalPolicy{SeparationOfDuties: true, RequesterPointer: "/a"}, domain.KindInput, ""},
	} {
		errs := tt.p.Check(tt.kind)
		if tt.field == "" && len(errs) > 0 || tt.field != "" && (len(errs) != 1 || errs[0].Field != tt.field) {
			t.Errorf("%+v on %s: %+v; want %q", tt.p, tt.kind, errs, tt.field)
		}
	}
}
