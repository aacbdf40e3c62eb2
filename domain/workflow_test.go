package domain_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	policies := []struct {
		name string
		p    domain.RetryPolicy
	}{
		{"default", domain.DefaultRetry},
		{"spec example", domain.RetryPolicy{MaxAttempts: 3, InitialBackoff: 20 * time.Millisecond, Multiplier: 2, Jitter: 0.5}},
		{"full jitter, capped", domain.RetryPolicy{MaxAttempts: 9, InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, Multiplier: 3, Jitter: 1}},
		{"no jitter", domain.RetryPolicy{MaxAttempts: 9, InitialBackoff: time.Second, MaxBackoff: time.Hour, Multiplier: 2}},
		{"multiplier below 1 is constant", domain.RetryPolicy{MaxAttempts: 9, InitialBackoff: time.Second, Multiplier: 0.5}},
		{"uncapped", domain.RetryPolicy{MaxAttempts: 1000, InitialBackoff: time.Second, Multiplier: 2, Jitter: 0.1}},
		{"infinite multiplier", domain.RetryPolicy{MaxAttempts: 9, InitialBackoff: time.Second, Multiplier: math.Inf(1)}},
	}
	for _, tt := range policies {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p
			prev := map[float64]time.Duration{}
			for attempt := 1; attempt <= 200; attempt++ {
				nominal := p.Backoff(attempt, 0)
				if nominal < 0 || p.MaxBackoff > 0 && nominal > p.MaxBackoff {
					t.Fatalf("attempt %d: nominal backoff %v outside 0–%v", attempt, nominal, p.MaxBackoff)
				}
				if attempt == 1 && nominal != p.InitialBackoff {
					t.Fatalf("attempt 1 waits %v; want InitialBackoff %v", nominal, p.InitialBackoff)
				}
				for _, r := range []float64{0, 0.25, 0.5, 0.999999} {
					d := p.Backoff(attempt, r)
					low := time.Duration(float64(nominal) * (1 - p.Jitter))
					if d > nominal || d < low-1 {
						t.Fatalf("attempt %d, r %v: %v outside [%v, %v]", attempt, r, d, low, nominal)
					}
					if d < prev[r] {
						t.Fatalf("attempt %d, r %v: %v is shorter than the attempt before (%v)", attempt, r, d, prev[r])
					}
					prev[r] = d
				}
			}
		})
	}
	p := domain.RetryPolicy{MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Multiplier: 2, Jitter: 0.5}
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 50: time.Second} {
		if got := p.Backoff(attempt, 0); got != want {
			t.Errorf("Backoff(%d, 0) = %v; want %v", attempt, got, want)
		}
	}
	if got := p.Backoff(2, 0.5); got != 150*time.Millisecond {
		t.Errorf("Backoff(2, 0.5) = %v; want 150ms (a quarter below nominal)", got)
	}
}

func noopStep(context.Context, domain.StepRequest) (domain.StepResult, error) {
	return domain.StepResult{}, nil
}

func TestWorkflowValidate(t *testing.T) {
	t.Parallel()
	retry := func(p domain.RetryPolicy) domain.StepOption { return domain.WithRetry(p) }
	tests := []struct {
		name string
		wf   *domain.Workflow
		says []string // parts of the error; none if valid
	}{
		{"valid", domain.NewWorkflow("claim", "1").Step("a", noopStep).Step("b", noopStep, domain.WithTimeout(time.Second)), nil},
		{"no steps", domain.NewWorkflow("claim", "1"), []string{"no steps"}},
		{"bad id and version", domain.NewWorkflow("", "v 1").Step("a", noopStep), []string{"workflow name is empty", "version name"}},
		{"bad step name", domain.NewWorkflow("claim", "1").Step("a/b", noopStep), []string{"step name"}},
		{"duplicate step", domain.NewWorkflow("claim", "1").Step("a", noopStep).Step("a", noopStep), []string{"used twice"}},
		{"nil function", domain.NewWorkflow("claim", "1").Step("a", nil), []string{"no function"}},
		{"no attempts", domain.NewWorkflow("claim", "1").Step("a", noopStep, retry(domain.RetryPolicy{})), []string{"MaxAttempts"}},
		{"negative backoff", domain.NewWorkflow("claim", "1").Step("a", noopStep, retry(domain.RetryPolicy{MaxAttempts: 2, InitialBackoff: -1})), []string{"negative"}},
		{"jitter above 1", domain.NewWorkflow("claim", "1").Step("a", noopStep, retry(domain.RetryPolicy{MaxAttempts: 2, Jitter: 1.5})), []string{"jitter"}},
		{"NaN jitter", domain.NewWorkflow("claim", "1").Step("a", noopStep, retry(domain.RetryPolicy{MaxAttempts: 2, Jitter: math.NaN()})), []string{"jitter"}},
		{"NaN multiplier", domain.NewWorkflow("claim", "1").Step("a", noopStep, retry(domain.RetryPolicy{MaxAttempts: 2, Multiplier: math.NaN()})), []string{"multiplier"}},
		{"every problem at once", domain.NewWorkflow("", "1").Step("", noopStep).Step("b", nil), []string{"workflow name", "step name is empty", "no function", "no steps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.wf.Validate()
			if len(tt.says) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v; want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate = nil; want an error")
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("Validate = %q; want it to mention %q", err, s)
				}
			}
			if err := domain.NewRegistry().Register(tt.wf); err == nil {
				t.Fatal("Register accepted an invalid workflow")
			}
		})
	}
	wf := domain.NewWorkflow("claim", "1").Step("verify", noopStep).Step("handle", noopStep)
	if wf.FirstStep() != "verify" || strings.Join(wf.Steps(), ",") != "verify,handle" {
		t.Fatalf("first %s, steps %v", wf.FirstStep(), wf.Steps())
	}
	if def, ok := wf.Lookup("handle"); !ok || def.Retry != domain.DefaultRetry {
		t.Fatalf("Lookup(handle) = %+v, %v; want the default retry policy", def, ok)
	}
	if _, ok := wf.Lookup("nope"); ok {
		t.Fatal("Lookup found an unknown step")
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	reg := domain.NewRegistry()
	v1 := domain.NewWorkflow("claim", "1").Step("a", noopStep)
	v2 := domain.NewWorkflow("claim", "2").Step("a", noopStep)
	other := domain.NewWorkflow("other", "1").Step("a", noopStep)
	for _, wf := range []*domain.Workflow{v1, v2, other} {
		if err := reg.Register(wf); err != nil {
			t.Fatal(err)
		}
	}
	err := reg.Register(domain.NewWorkflow("claim", "1").Step("b", noopStep))
	var ce *domain.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("registering version 1 twice = %v; want a conflict", err)
	}
	if w, ok := reg.Latest("claim"); !ok || w != v2 {
		t.Fatalf("Latest = %v; want version 2", w)
	}
	if w, ok := reg.Get("claim", "1"); !ok || w != v1 {
		t.Fatalf("Get(claim, 1) = %v", w)
	}
	if _, ok := reg.Get("claim", "3"); ok {
		t.Fatal("Get found an unregistered version")
	}
	if _, ok := reg.Latest("nope"); ok {
		t.Fatal("Latest found an unregistered workflow")
	}
	if all := reg.All(); len(all) != 3 || all[0] != v1 || all[2] != other {
		t.Fatalf("All = %v", all)
	}

	// Safe for concurrent use (run with -race).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			wf := domain.NewWorkflow("c", string(rune('a'+i))).Step("a", noopStep)
			if err := reg.Register(wf); err != nil {
				t.Error(err)
			}
			reg.Latest("c")
			reg.Get("claim", "1")
			reg.All()
		})
	}
	wg.Wait()
	if n := len(reg.All()); n != 11 {
		t.Fatalf("%d workflows after concurrent registration; want 11", n)
	}
}

func TestStepRequestBind(t *testing.T) {
	t.Parallel()
	var v struct{ A int }
	if err := (domain.StepRequest{Step: "s"}).Bind(&v); err != nil {
		t.Fatalf("empty input: %v", err)
	}
	if err := (domain.StepRequest{Step: "s", Input: []byte(`{"A":3}`)}).Bind(&v); err != nil || v.A != 3 {
		t.Fatalf("Bind = %v, %+v", err, v)
	}
	if err := (domain.StepRequest{Step: "verify", Input: []byte(`{"A":"x"}`)}).Bind(&v); err == nil || !strings.Contains(err.Error(), "verify") {
		t.Fatalf("Bind of a mistyped input = %v; want an error naming the step", err)
	}
}

// A step reads a name only as its field spells it, so no spelling of a
// name can smuggle a value past a schema that checks another spelling.
func TestStepRequestBindMatchesNamesExactly(t *testing.T) {
	t.Parallel()
	var in struct {
		Email string `json:"email"`
		Extra int    `json:"extra"`
	}
	err := (domain.StepRequest{Step: "s", Input: []byte(`{"EMAIL":"victim@evil.test","Email":"x","extra":1,"unread":true}`)}).Bind(&in)
	if err != nil || in.Email != "" || in.Extra != 1 {
		t.Fatalf("Bind = %v, %+v; want no email read, extra 1, unknown names ignored", err, in)
	}
	if err := (domain.StepRequest{Step: "s", Input: []byte(`{"extra":1,"extra":2}`)}).Bind(&in); err == nil {
		t.Fatal("Bind of duplicate names succeeded")
	}
	var cp struct {
		Who string `json:"who"`
	}
	p, err := (domain.StepRequest{Step: "s", Resumed: true,
		Input: []byte(`{"checkpoint":{"WHO":"x"},"resumeData":{"ok":true},"ResumeData":1}`)}).Resume(&cp)
	if err != nil || cp.Who != "" || string(p.ResumeData) != `{"ok":true}` {
		t.Fatalf("Resume = %+v, %v, checkpoint %+v; want names matched exactly", p, err, cp)
	}
}

func TestEnums(t *testing.T) {
	t.Parallel()
	for _, s := range domain.RunStatuses {
		terminal := s == domain.RunSucceeded || s == domain.RunFailed || s == domain.RunCancelled
		if !s.Valid() || s.Terminal() != terminal {
			t.Errorf("run status %s: valid %v terminal %v", s, s.Valid(), s.Terminal())
		}
	}
	if domain.RunStatus("paused").Valid() || domain.SuspensionKind("email").Valid() || domain.SuspensionStatus("done").Valid() {
		t.Error("an unknown value is valid")
	}
	for _, k := range domain.SuspensionKinds {
		if !k.Valid() {
			t.Errorf("kind %s invalid", k)
		}
	}
	for _, s := range []domain.SuspensionStatus{domain.SuspensionPending, domain.SuspensionResumed, domain.SuspensionExpired, domain.SuspensionCancelled} {
		if !s.Valid() {
			t.Errorf("suspension status %s invalid", s)
		}
	}
	for typ, blocking := range map[domain.CommandType]bool{domain.CmdSuspend: true, domain.CmdReview: true, domain.CmdInvoke: false, domain.CmdComplete: false, domain.CmdFail: false} {
		if typ.Blocking() != blocking {
			t.Errorf("%s.Blocking() = %v", typ, !blocking)
		}
	}
}
