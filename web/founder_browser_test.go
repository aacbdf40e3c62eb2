package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tollgatehq/tollgate/domain"
)

// screenSize is a browser window a page must work in.
type screenSize struct {
	name          string
	width, height int64
	mobile        bool
}

var (
	desktop = screenSize{"1280x800", 1280, 800, false}
	phone   = screenSize{"390x844", 390, 844, true}
)

// emulate makes tab render as on a screen of size.
func emulate(t *testing.T, tab context.Context, size screenSize) {
	t.Helper()
	if _, err := chromedp.Call(tab, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: size.width, Height: size.height, DeviceScaleFactor: 1, Mobile: size.mobile}); err != nil {
		t.Fatalf("emulate %s: %v", size.name, err)
	}
}

// fitsWidth fails when the page in tab scrolls sideways on a screen of
// size. A phone (mobile emulation) widens its layout viewport to fit what
// overflows, so innerWidth alone would hide an overflow: it must stay the
// screen's width too.
func fitsWidth(t *testing.T, tab context.Context, what string, size screenSize) {
	t.Helper()
	got, err := chromedp.Run(tab, chromedp.Evaluate[[]int64](`[document.documentElement.scrollWidth, window.innerWidth]`))
	if err != nil {
		t.Fatalf("measuring %s: %v", what, err)
	}
	if got[0] > got[1] || got[1] > size.width {
		t.Errorf("%s at %s scrolls sideways: %d px wide, window %d px", what, size.name, got[0], got[1])
	}
}

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
		for _, size := range []screenSize{desktop, phone} {
			run, s := e.paused(t, "contract-flow", contractInput(ada, "Acme Robotics"))
			tab := open()
			emulate(t, tab, size)
			signIn(t, tab, e.srv.URL, ada, pass)
			card := `a.request-card[data-suspension="` + s.ID + `"]`
			do(t, tab, "open My requests", chromedp.Navigate(e.srv.URL+"/my"), chromedp.WaitVisible(card))
			fitsWidth(t, tab, "My requests", size)
			screenshot(t, tab, "founder-my-"+size.name+"-"+dialectOf(t))

			do(t, tab, "click the request", chromedp.Click(card), chromedp.WaitVisible("#files"))
			fitsWidth(t, tab, "the request", size)
			waitTrue(t, tab, "a drop zone around the file input", `document.querySelector('[data-dropzone] input[type=file]#files') !== null`, time.Second)
			tabTo(t, tab, "#files", 15)
			screenshot(t, tab, "founder-request-"+size.name+"-"+dialectOf(t))

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
			fitsWidth(t, tab, "the request after the upload", size)
			screenshot(t, tab, "founder-after-upload-"+size.name+"-"+dialectOf(t))
			e.waitRun(t, run.ID, "succeeded")
		}
	})
}
