package views

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func TestAskedOfSaysWhatIsAskedInWords(t *testing.T) {
	for _, c := range []struct {
		s    domain.Suspension
		want string
	}{
		{domain.Suspension{Accept: []string{"application/pdf"}}, "Upload: PDF, up to 20 MB each"},
		{domain.Suspension{Accept: []string{"application/pdf", "image/*"}}, "Upload: PDF or image, up to 20 MB each"},
		{domain.Suspension{Accept: []string{"image/png", "image/jpeg", "application/x-custom"}}, "Upload: PNG image, JPEG image or application/x-custom, up to 20 MB each"},
		{domain.Suspension{Kind: domain.KindApproval}, "Approve or reject"},
		{domain.Suspension{Kind: domain.KindInput, ResumeSchema: json.RawMessage(`{"type":"object"}`)}, "Fill in a form"},
		{domain.Suspension{Kind: domain.KindInput}, "Send an answer"},
	} {
		if got := AskedOf(c.s, 20<<20); got != c.want {
			t.Errorf("AskedOf(%v) = %q; want %q", c.s.Accept, got, c.want)
		}
	}
}

func TestAskSentencePrefersInstructions(t *testing.T) {
	if got := AskSentence(domain.Suspension{Instructions: "Upload a PDF of your signed contract.", Accept: []string{"image/png"}}); got != "Upload a PDF of your signed contract." {
		t.Errorf("with instructions: %q", got)
	}
	for accept, want := range map[string]string{"image/*": "Upload an image.", "application/pdf": "Upload a PDF.", "text/csv": "Upload a CSV file."} {
		if got := AskSentence(domain.Suspension{Accept: []string{accept}}); got != want {
			t.Errorf("AskSentence(%s) = %q; want %q", accept, got, want)
		}
	}
}

func TestStateOf(t *testing.T) {
	at := time.Now()
	for _, c := range []struct {
		s    domain.Suspension
		want RequestState
	}{
		{domain.Suspension{Status: domain.SuspensionPending}, StateWaiting},
		{domain.Suspension{Status: domain.SuspensionResumed, ResumedBy: "ada@example.com", ResumedAt: &at}, StateDone},
		{domain.Suspension{Status: domain.SuspensionResumed, ResumedBy: "timer", ResumedAt: &at}, StateExpired},
		{domain.Suspension{Status: domain.SuspensionExpired}, StateExpired},
		{domain.Suspension{Status: domain.SuspensionCancelled}, StateCancelled},
	} {
		if got := StateOf(c.s); got != c.want {
			t.Errorf("StateOf(%s by %q) = %v; want %v", c.s.Status, c.s.ResumedBy, got, c.want)
		}
	}
}

func TestUntilRoundsToTheNearestUnit(t *testing.T) {
	now := time.Now()
	for d, want := range map[time.Duration]string{72*time.Hour - time.Second: "in 3 days", 90 * time.Minute: "in 2 hours", 10 * time.Minute: "in 10 minutes", -2 * time.Hour: "2 hours ago"} {
		if got := Until(now, now.Add(d)); got != want {
			t.Errorf("Until(+%v) = %q; want %q", d, got, want)
		}
	}
}
