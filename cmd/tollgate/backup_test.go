package main

import (
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// A backup taken while the server writes is a whole, consistent database:
// it passes PRAGMA integrity_check and serves the runs it holds.
func TestBackupWhileServing(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, nil, "--data", data)
	c := s.client()
	input := map[string]any{"claimId": "c-1", "claimText": "We have 12 customers", "founderEmail": "ada@example.com"}
	before := c.startRun(t, "claim-verification", input)
	c.waitStatus(t, before.ID, "suspended")

	// Runs keep starting while the backup is taken.
	var started atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r, err := c.do(t.Context(), "POST", "/api/v1/workflows/claim-verification/runs", map[string]any{"input": input}); err == nil && r.Status == http.StatusCreated {
				started.Add(1)
			}
		}
	})
	// The backup's folder need not exist: the manual's example names
	// backups/… on a fresh machine.
	backup := filepath.Join(t.TempDir(), "backups", "daily", "tollgate-backup.db")
	var out, errb syncBuffer
	err := run(t.Context(), []string{"backup", "--data", data, "--to", backup}, envFunc(nil), &out, &errb)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "Backed up") || started.Load() == 0 {
		t.Errorf("backup said %q; %d runs started meanwhile", out.String(), started.Load())
	}
	if _, err := os.Stat(backup + ".partial"); !os.IsNotExist(err) {
		t.Errorf("the partial file is left behind: %v", err)
	}

	db, err := sql.Open("sqlite", "file:"+backup+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
	db.Close()

	// A second backup to the same file is refused, and changes nothing.
	if err := run(t.Context(), []string{"backup", "--data", data, "--to", backup}, envFunc(nil), &out, &errb); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a backup over an existing file: %v", err)
	}
	// A data folder without a database is not backed up (nor created).
	empty := t.TempDir()
	if err := run(t.Context(), []string{"backup", "--data", empty, "--to", filepath.Join(empty, "new", "b.db")}, envFunc(nil), &out, &errb); err == nil {
		t.Error("backup of a folder without a database succeeded")
	}
	for _, name := range []string{"tollgate.db", "new"} {
		if _, err := os.Stat(filepath.Join(empty, name)); !os.IsNotExist(err) {
			t.Errorf("a refused backup created %s: %v", name, err)
		}
	}

	// Restoring is copying the file into a data folder.
	restored := t.TempDir()
	if err := os.Rename(backup, filepath.Join(restored, "tollgate.db")); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, nil, "--data", restored)
	var got struct{ ID, Status string }
	s2.client().call(t, http.StatusOK, "GET", "/api/v1/runs/"+before.ID, nil).decode(t, &got)
	if got.Status != "suspended" {
		t.Errorf("the restored run is %+v; want it suspended", got)
	}
}
