package web

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func TestKeyCache(t *testing.T) {
	now := time.Unix(1_000, 0)
	c := newKeyCache(5*time.Second, 3)
	c.now = func() time.Time { return now }
	hash := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	alice := Principal{User: domain.User{ID: "u-alice", Role: domain.RoleAdmin}}

	if _, ok := c.get(hash("a")); ok {
		t.Fatal("empty cache returned an entry")
	}
	c.put(hash("a"), alice)
	if p, ok := c.get(hash("a")); !ok || p.User.ID != "u-alice" {
		t.Fatalf("get after put = %+v, %v", p, ok)
	}
	now = now.Add(5 * time.Second)
	if _, ok := c.get(hash("a")); ok {
		t.Fatal("an entry outlived its TTL")
	}

	c.put(hash("a"), alice)
	c.put(hash("b"), Principal{User: domain.User{ID: "u-bob"}})
	c.forgetUser("u-alice")
	if _, ok := c.get(hash("a")); ok {
		t.Fatal("forgetUser kept the user's key")
	}
	if _, ok := c.get(hash("b")); !ok {
		t.Fatal("forgetUser dropped another user's key")
	}

	for _, k := range []string{"c", "d", "e"} {
		c.put(hash(k), alice)
	}
	if n := len(c.entries); n > 3 {
		t.Fatalf("cache holds %d entries, bound is 3", n)
	}

	off := newKeyCache(-1, 3)
	off.put(hash("a"), alice)
	if _, ok := off.get(hash("a")); ok {
		t.Fatal("a disabled cache returned an entry")
	}
}
