//go:build bench

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Upload memory: four uploads of uploadBenchSize each, at once, to a real
// `tollgate serve` process on the embedded database, while the test
// samples the process's resident memory (VmRSS). Uploads are streamed to
// the database in chunks, so the peak must stay within uploadBenchBudget
// of what the idle server holds, whatever the files' size.
//
//	go test -tags bench -run '^TestBenchUploadMemory$' -count=1 -v ./cmd/tollgate
const (
	uploadBenchFiles   = 4
	uploadBenchBudget  = 100 << 20
	uploadBenchSampled = 50 * time.Millisecond
)

// uploadBenchSize is each upload's size; TOLLGATE_BENCH_UPLOAD_MIB lowers
// it for a quick try.
var uploadBenchSize = benchSize("TOLLGATE_BENCH_UPLOAD_MIB", 400, 1) << 20

// uploadLine is the upload part's BENCH line.
type uploadLine struct {
	Name         string `json:"name"`
	Dialect      string `json:"dialect"`
	Files        int    `json:"files"`
	FileMiB      int    `json:"fileMiB"`
	IdleMiB      fig    `json:"idleMiB"`
	PeakMiB      fig    `json:"peakMiB"`
	AboveIdleMiB fig    `json:"aboveIdleMiB"`
	BudgetMiB    int    `json:"budgetMiB"`
	Seconds      fig    `json:"seconds"`
}

func TestBenchUploadMemory(t *testing.T) {
	benchParts(t, "upload")
	dir := t.TempDir()
	bin := filepath.Join(dir, "tollgate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "data")
	env := append(os.Environ(), "TOLLGATE_DATA="+data, "TOLLGATE_PASSWORD=a long enough password", "TOLLGATE_LOG_LEVEL=warn")
	tool := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tollgate %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tool("migrate")
	tool("user", "add", "--email", "bench@example.com", "--role", "admin")
	key := regexp.MustCompile(`\(shown once\): (tg_\S+)`).FindStringSubmatch(tool("apikey", "create", "--email", "bench@example.com"))[1]

	addr := freeAddr(t)
	limit := strconv.Itoa(uploadBenchSize + 1<<20)
	srv := exec.Command(bin, "serve", "--addr", addr, "--upload-limit", limit, "--upload-request-limit", limit,
		"--uploads-per-user", strconv.Itoa(uploadBenchFiles), "--uploads-in-flight", strconv.Itoa(uploadBenchFiles))
	srv.Env, srv.Stdout, srv.Stderr = env, io.Discard, os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Signal(os.Interrupt); _ = srv.Wait() })
	base := "http://" + addr
	waitHealthy(t, base)

	ids := pendingClaims(t, base, key, uploadBenchFiles)
	hc := signInAs(t, base, "bench@example.com", "a long enough password")
	time.Sleep(2 * time.Second) // let start-up garbage be collected
	idle := rss(t, srv.Process.Pid)

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := rss(t, srv.Process.Pid); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(uploadBenchSampled):
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			if status, body := streamUpload(hc, base+"/suspensions/"+id+"/documents", fmt.Sprintf("statement-%d.pdf", i), uploadBenchSize); status != http.StatusSeeOther {
				t.Errorf("upload %d: %d %s", i, status, body)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	took := time.Since(start)
	above := peak.Load() - idle
	t.Logf("%d concurrent uploads of %d MiB in %s: idle RSS %d MiB, peak %d MiB, %d MiB above idle (budget %d MiB)",
		uploadBenchFiles, uploadBenchSize>>20, took.Round(time.Second), idle>>20, peak.Load()>>20, above>>20, uploadBenchBudget>>20)
	fmt.Printf("\nUpload memory: %d uploads of %d MiB at once to `tollgate serve` on SQLite: RSS idle %s, peak %s, %s above idle\n  %s  RSS above idle ≤ %d MiB\n",
		uploadBenchFiles, uploadBenchSize>>20, mib(idle), mib(peak.Load()), mib(above), verdict(above <= uploadBenchBudget), uploadBenchBudget>>20)
	benchLine(t, uploadLine{Name: "upload", Dialect: "sqlite", Files: uploadBenchFiles, FileMiB: uploadBenchSize >> 20, IdleMiB: mibFig(idle), PeakMiB: mibFig(peak.Load()),
		AboveIdleMiB: mibFig(above), BudgetMiB: uploadBenchBudget >> 20, Seconds: fig(took.Seconds())})
	if above > uploadBenchBudget {
		t.Errorf("RSS rose %d MiB during the uploads; budget %d MiB", above>>20, uploadBenchBudget>>20)
	}
}

func waitHealthy(t *testing.T, base string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never became healthy: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pendingClaims starts n claim-verification runs that ask for documents
// and returns their pending suspensions' ids.
func pendingClaims(t *testing.T, base, key string, n int) []string {
	api := func(method, path, body string, v any) {
		req, _ := http.NewRequest(method, base+"/api/v1"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, err)
		}
	}
	for i := range n {
		var run struct{ ID string }
		api("POST", "/workflows/claim-verification/runs", fmt.Sprintf(`{"input":{"claimId":"c-%d","claimText":"Up 300%%","founderEmail":"ada@example.com"}}`, i), &run)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var page struct{ Items []struct{ ID string } }
		api("GET", "/suspensions?status=pending&reason=awaiting_documentation", "", &page)
		if len(page.Items) == n {
			ids := make([]string, n)
			for i, s := range page.Items {
				ids[i] = s.ID
			}
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d claims paused", len(page.Items), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// streamUpload posts one file of size bytes (a PDF header, then random
// bytes), generated as it is sent.
func streamUpload(hc *http.Client, target, name string, size int) (int, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		w, err := mw.CreateFormFile("files", name)
		if err == nil {
			block := make([]byte, 64<<10)
			rng := rand.NewChaCha8([32]byte{byte(len(name))})
			_, _ = rng.Read(block)
			copy(block, "%PDF-1.7\n")
			for sent := 0; sent < size && err == nil; sent += len(block) {
				_, err = w.Write(block[:min(len(block), size-sent)])
			}
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest("POST", target, pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, string(body)
}

// rss is a process's resident memory in bytes, from /proc.
func rss(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
