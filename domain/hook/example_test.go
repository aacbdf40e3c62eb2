package hook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/tollgatehq/tollgate/domain/hook"
)

// A subscriber checks each delivery's signature before it trusts the
// event: the secret is the one the subscription's 201 answered, and a
// delivery older than five minutes is refused as a replay. Answering
// anything but 2xx makes Tollgate send the delivery again later, with the
// same id.
func Example_receiver() {
	secret := []byte("5f2c9e…the subscription's secret")
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := hook.Verify(secret, r.Header.Get(hook.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var event struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Title string `json:"title"`
				URL   string `json:"url"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &event); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		// De-duplicate on event.ID: a delivery may come more than once.
		fmt.Printf("%s: %s %s\n", event.Type, event.Data.Title, event.Data.URL)
	})
	srv := httptest.NewServer(receiver)
	defer srv.Close()

	// What Tollgate sends, signed now and signed with another secret.
	body := []byte(`{"id":"0196a1","type":"suspension.created","createdAt":"2026-11-30T09:00:00Z",` +
		`"data":{"title":"Expense: Conference ticket — €120.50","url":"https://tollgate.example.com/suspensions/0196b2"}}`)
	for _, key := range [][]byte{secret, []byte("a guess")} {
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set(hook.SignatureHeader, hook.Sign(key, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// suspension.created: Expense: Conference ticket — €120.50 https://tollgate.example.com/suspensions/0196b2
	// 200
	// 401
}
