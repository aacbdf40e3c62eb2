package storage_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/tollgatehq/tollgate/storage"
)

// Servers sharing a database share its secret: the first call stores what
// fresh returns, and every later call, on any handle, reads it back.
func TestSecretIsSharedByEveryHandle(t *testing.T) {
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		a, b := openDB(t, o), openDB(t, o)
		calls := 0
		fresh := func(s string) func() ([]byte, error) {
			return func() ([]byte, error) { calls++; return []byte(s), nil }
		}
		first, err := a.Secret(t.Context(), fresh("first secret, \x00 and all bytes\xff"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "first secret, \x00 and all bytes\xff"; string(first) != want {
			t.Fatalf("first Secret = %q, want %q", first, want)
		}
		for _, db := range []*storage.DB{a, b} {
			got, err := db.Secret(t.Context(), fresh("another secret"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, first) {
				t.Errorf("Secret = %q, want the stored %q", got, first)
			}
		}
		if calls != 1 {
			t.Errorf("fresh was called %d times, want once", calls)
		}
	})
}

// Servers starting at once on a fresh database end up with one secret.
func TestSecretRace(t *testing.T) {
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		dbs := []*storage.DB{openDB(t, o), openDB(t, o), openDB(t, o), openDB(t, o)}
		got := make([][]byte, len(dbs))
		var wg sync.WaitGroup
		for i, db := range dbs {
			wg.Go(func() {
				s, err := db.Secret(t.Context(), func() ([]byte, error) { return []byte{byte(i)}, nil })
				if err != nil {
					t.Error(err)
				}
				got[i] = s
			})
		}
		wg.Wait()
		for i := range got {
			if !bytes.Equal(got[i], got[0]) {
				t.Errorf("handle %d has secret %x, handle 0 has %x", i, got[i], got[0])
			}
		}
	})
}

// A failing fresh stores nothing.
func TestSecretFreshFails(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		boom := errors.New("no randomness")
		if _, err := db.Secret(t.Context(), func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
			t.Fatalf("Secret = %v, want %v", err, boom)
		}
		got, err := db.Secret(t.Context(), func() ([]byte, error) { return []byte("later"), nil })
		if err != nil || string(got) != "later" {
			t.Errorf("Secret after a failed fresh = %q, %v; want later", got, err)
		}
	})
}
