package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tollgatehq/tollgate/domain"
)

// tabTo presses Tab until the focus is on sel, failing after presses.
func tabTo(t *testing.T, tab context.Context, sel string, presses int) {
	t.Helper()
	for range presses {
		do(t, tab, "press Tab", chromedp.KeyEvent(kb.Tab))
		on, err := chromedp.Run(tab, chromedp.Evaluate[bool](fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		if on {
			return
		}
	}
	t.Fatalf("%s is not reached with %d presses of Tab", sel, presses)
}

func TestBrowserFounderFindsARequestUploadsAndSeesWhatHappensNext(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		const ada = "ada@founders.example"
		_, pass := e.addPerson(t, ada, domain.RoleFounder)
		pdf := filepath.Join(t.TempDir(), "contract.pdf")
		if err := os.WriteFile(pdf, pdfBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, size := range sizes {
			run, s := e.paused(t, "contract-flow", contractInput(ada, "Acme Robotics"))
			tab := open()
			atSize(t, tab, size)
			signIn(t, tab, e.srv.URL, ada, pass)
			card := `a.request-card[data-suspension="` + s.ID + `"]`
			do(t, tab, "open My requests", chromedp.Navigate(e.srv.URL+"/my"), chromedp.WaitVisible(card))
			checkPage(t, tab, size, "My requests")
			screenshot(t, tab, "founder-my-"+size.Name)

			do(t, tab, "click the request", chromedp.Click(card), chromedp.WaitVisible("#files"))
			checkPage(t, tab, size, "the request")
			waitTrue(t, tab, "a drop zone around the file input", `document.querySelector('[data-dropzone] input[type=file]#files') !== null`, time.Second)
			tabTo(t, tab, "#files", 15)
			screenshot(t, tab, "founder-request-"+size.Name)

			do(t, tab, "choose the contract", chromedp.SetUploadFiles("#files", []string{pdf}))
			waitTrue(t, tab, "the chosen file's name", `document.querySelector('[data-chosen]').textContent === "contract.pdf"`, 2*time.Second)
			do(t, tab, "upload it", chromedp.Click(`form.upload button[type=submit]`), chromedp.WaitVisible(`p.notice`))
			text, err := chromedp.Run(tab, chromedp.Text(`p.notice`))
			if want := "Thanks — we received contract.pdf. The team will review it; you will get an email if anything else is needed."; err != nil || text != want {
				t.Fatalf("after the upload the page says %q (%v); want %q", text, err, want)
			}
			state, err := chromedp.Run(tab, chromedp.Text(`.request-state .state`))
			if err != nil || state != "Done" {
				t.Errorf("after the upload the request is %q (%v); want Done", state, err)
			}
			checkPage(t, tab, size, "the request after the upload")
			screenshot(t, tab, "founder-after-upload-"+size.Name)
			e.waitRun(t, run.ID, "succeeded")
		}
	})
}
