package domain

import "testing"

func TestSameEmail(t *testing.T) {
	same := [][2]string{
		{"rita@example.com", "RITA@Example.com"},
		{"rita@example.com", "  rita@example.com\t"},
		{"rita@example.com", "rita@example.com."},
		{"rita@example.com", "rita+probe@example.com"},
		{"r1@example.com", "r1+alt@example.com."},
		{"rita@gmail.com", "r.ita@gmail.com"},
		{"rita@gmail.com", "R.i.t.a+x@googlemail.com"},
	}
	for _, p := range same {
		if !SameEmail(p[0], p[1]) {
			t.Errorf("SameEmail(%q, %q) = false; want one mailbox", p[0], p[1])
		}
	}
	different := [][2]string{
		{"rita@example.com", "r.ita@example.com"}, // dots matter outside gmail
		{"rita@example.com", "rita@example.org"},
		{"rita@example.com", "ritab@example.com"},
		{"", ""},
		{"rita@example.com", ""},
		{"+rita@example.com", "@example.com"},
	}
	for _, p := range different {
		if SameEmail(p[0], p[1]) {
			t.Errorf("SameEmail(%q, %q) = true; want two mailboxes", p[0], p[1])
		}
	}
}
