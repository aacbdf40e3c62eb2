package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
)

// A founder drags a file from their desktop onto the request's drop zone:
// the zone lights up while the file is over it, takes the file as if it
// had been chosen, and the upload that follows resumes the run.
func TestBrowserFounderDropsAFileOnTheRequest(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		const ada = "ada@founders.example"
		_, pass := e.addPerson(t, ada, domain.RoleFounder)
		run, s := e.paused(t, "contract-flow", contractInput(ada, "Acme Robotics"))
		tab := open()
		atSize(t, tab, desktop)
		signIn(t, tab, e.srv.URL, ada, pass)
		card := `a.request-card[data-suspension="` + s.ID + `"]`
		do(t, tab, "open the request", chromedp.Navigate(e.srv.URL+"/my"), chromedp.WaitVisible(card), chromedp.Click(card), chromedp.WaitVisible("#files"))

		// What the browser hands a page when a file is dropped on it: drag
		// events carrying a DataTransfer with the file.
		drag := func(event string) string {
			return fmt.Sprintf(`(() => {
				const dt = new DataTransfer();
				dt.items.add(new File([%q], "deck.pdf", {type: "application/pdf"}));
				const zone = document.querySelector("[data-dropzone]");
				zone.dispatchEvent(new DragEvent(%q, {bubbles: true, cancelable: true, dataTransfer: dt}));
				return zone.classList.contains("over");
			})()`, string(pdfBytes), event)
		}
		for _, step := range []struct {
			event string
			over  bool
		}{{"dragenter", true}, {"dragover", true}, {"drop", false}} {
			over, err := chromedp.Run(tab, chromedp.Evaluate[bool](drag(step.event)))
			if err != nil {
				t.Fatalf("%s: %v", step.event, err)
			}
			if over != step.over {
				t.Fatalf("after %s the zone is lit: %v, want %v", step.event, over, step.over)
			}
		}
		waitTrue(t, tab, "the dropped file's name", `document.querySelector('[data-chosen]').textContent === "deck.pdf"`, 2*time.Second)
		do(t, tab, "upload it", chromedp.Click(`form.upload button[type=submit]`), chromedp.WaitVisible(`p.notice`))
		text, err := chromedp.Run(tab, chromedp.Text(`p.notice`))
		if want := "Thanks — we received deck.pdf."; err != nil || len(text) < len(want) || text[:len(want)] != want {
			t.Fatalf("after the upload the page says %q (%v); want it to start %q", text, err, want)
		}
		e.waitRun(t, run.ID, "succeeded")
	})
}
