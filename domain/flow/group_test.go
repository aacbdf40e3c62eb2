package flow_test

import (
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain/flow"
)

// paidOrExpired is the any-of wait as a document writes it.
const paidOrExpired = `{"id": "invoice", "version": "1", "steps": [
  {"type": "any", "name": "paid-or-expired", "of": [
     {"type": "webhook",  "name": "paid"},
     {"type": "wait",     "name": "expire", "durationMs": 604800000},
     {"type": "approval", "name": "waive", "approvers": {"role": "admin"}},
     {"type": "signal",   "name": "payment"}]},
  {"type": "all", "name": "papers", "of": [
     {"type": "input", "name": "id", "accept": ["application/pdf"]},
     {"type": "input", "name": "proof", "separationOfDuties": true}]}]}`

func TestParseAcceptsGroups(t *testing.T) {
	t.Parallel()
	doc, err := flow.Parse([]byte(paidOrExpired), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if g := doc.Steps[0]; g.Type != flow.TypeAny || len(g.Of) != 4 || g.Of[3].Type != flow.TypeSignal || *g.Of[1].DurationMs != 604800000 {
		t.Fatalf("any step = %+v", g)
	}
	if g := doc.Steps[1]; g.Type != flow.TypeAll || len(g.Of) != 2 || !g.Of[1].SeparationOfDuties {
		t.Fatalf("all step = %+v", g)
	}
}

func TestParseReportsGroupProblemsWithTheirPaths(t *testing.T) {
	t.Parallel()
	got := problems(t, `{"id": "bad-groups", "version": "1", "steps": [
	  {"type": "any", "name": "one", "of": [{"type": "webhook", "name": "only"}]},
	  {"type": "all", "name": "many", "of": [
	     {"type": "webhook", "name": "a", "next": "one"},
	     {"type": "wait", "name": "a", "durationMs": -5},
	     {"type": "task", "name": "t", "handler": "sendEmail"},
	     {"type": "approval", "name": "b", "quorum": -1, "display": {"title": "x"}},
	     {"type": "signal", "name": "s", "colour": "red"}]},
	  {"type": "signal", "name": "alone"}]}`)
	want := []string{
		`steps[1].of[4].colour: unknown field`,
		`steps[0].of: an any step waits on 2 to 20 things; it has 1`,
		`steps[1].of[0].next: a branch has no next: its all step goes on when it completes`,
		`steps[1].of[1].name: branch name "a" is already used by of[0]`,
		`steps[1].of[1].durationMs: must not be negative`,
		`steps[1].of[2].type: a branch is one of wait, webhook, approval, input, signal`,
		`steps[1].of[3].display: a branch has no display: its all step goes on when it completes`,
		`steps[1].of[3].quorum: must be between 1 and 100`,
		`steps[2].type: a signal wait is a branch of an any or all step`,
	}
	if !sameSet(got, want) {
		t.Fatalf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
