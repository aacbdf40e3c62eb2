package main

import (
	"encoding/json"
	"strings"
	"testing"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// `tollgate suspensions bulk approve --reason …`, as the README once wrote
// it, read the comment as a filter: a reason no request has decided
// nothing and exited 0; a reason some have approved them all with no
// comment. A bulk decision whose only filter is --reason (or that has
// none) is now refused with a sentence that says --reason is a filter and
// names --comment and --all, and nothing is decided; --all, or a yes at
// the terminal, lets it go ahead, with its comment from --comment.
func TestBulkDecisionByReasonAlone(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		s := startServer(t, env)
		c := s.client()
		c.register(t, `{"id": "sign-off", "version": "1", "steps": [{"type": "approval", "name": "ok", "reason": "awaiting_sign_off"}]}`)
		start := func(n int) {
			for range n {
				var run apiclient.Run
				cliJSON(t, s, &run, "runs", "start", "sign-off", "--wait")
			}
		}
		pending := func() int {
			return len(c.suspensions(t, "status=pending&reason=awaiting_sign_off"))
		}
		start(2)
		for _, tc := range []struct {
			args []string
			says []string
		}{
			{[]string{"--reason", "Q3 batch"}, []string{`no pending request has the reason "Q3 batch"`, "nothing was approved", "not the comment", "--comment"}},
			{[]string{"--reason", "awaiting_sign_off", "--comment", "fine"}, []string{`--reason "awaiting_sign_off" alone chooses every pending request whose reason is "awaiting_sign_off" (2 now)`,
				"not the comment", "Nothing was approved", "--all", "--workflow"}},
			{nil, []string{"no filter chooses the requests", "every pending request (", "Nothing was approved", "--all"}},
		} {
			args := append([]string{"suspensions", "bulk", "approve"}, tc.args...)
			out, err := cliRun(t, s, "", args...)
			if err == nil {
				t.Errorf("tollgate %s exited 0:\n%s", strings.Join(args, " "), out)
				continue
			}
			for _, want := range tc.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("tollgate %s: %q does not say %q", strings.Join(args, " "), err, want)
				}
			}
			if n := pending(); n != 2 {
				t.Fatalf("tollgate %s decided %d requests", strings.Join(args, " "), 2-n)
			}
		}

		// At a terminal, the person is asked, told how many; no is no.
		bulk := []string{"suspensions", "bulk", "approve", "--reason", "awaiting_sign_off", "--comment", "Q3 batch"}
		ask := func(answer string) (string, string, error) {
			var out, prompt syncBuffer
			err := runWithInput(t.Context(), bulk, envFunc(map[string]string{"TOLLGATE_URL": s.URL, "TOLLGATE_API_KEY": s.Key}),
				console{strings.NewReader(answer), &prompt}, &out, &prompt)
			return out.String(), prompt.String(), err
		}
		out, prompt, err := ask("n\n")
		if err == nil || !strings.Contains(err.Error(), "nothing was approved") || pending() != 2 {
			t.Fatalf("answered no: %v, %d pending\n%s", err, pending(), out)
		}
		if want := `This would approve every pending request whose reason is "awaiting_sign_off" (2 now). Approve them all? [y/N]`; !strings.Contains(prompt, want) {
			t.Errorf("the question %q; want %q", prompt, want)
		}
		if out, _, err := ask("yes\n"); err != nil || !strings.Contains(out, "2 done: 2 succeeded, 0 failed") || pending() != 0 {
			t.Fatalf("answered yes: %v, %d pending\n%s", err, pending(), out)
		}

		// --all goes ahead without asking, with its comment.
		start(1)
		if out, err := cliRun(t, s, "", "suspensions", "bulk", "reject", "--reason", "awaiting_sign_off", "--all", "--comment", "Q4 batch"); err != nil || !strings.Contains(out, "1 done: 1 succeeded") {
			t.Fatalf("--all: %v\n%s", err, out)
		}
		comments := map[string]int{}
		for _, sp := range c.suspensions(t, "reason=awaiting_sign_off") {
			var d struct{ Comment string }
			if err := json.Unmarshal(sp.ResumeData, &d); err != nil {
				t.Errorf("request %s's resume data %s: %v", sp.ID, sp.ResumeData, err)
			}
			comments[d.Comment]++
		}
		if comments["Q3 batch"] != 2 || comments["Q4 batch"] != 1 {
			t.Errorf("the decisions' comments: %v; want Q3 batch twice, Q4 batch once", comments)
		}
	})
}
