package domain

import "strings"

// NormalEmail is the form in which two spellings of one mailbox compare
// equal, for deciding who a person is: lower case, without surrounding
// space or a trailing dot, and without a +tag, which most mail servers
// deliver to the same mailbox. Gmail also ignores dots in the local part
// and knows googlemail.com as gmail.com, so those go too. It is for
// comparing, never for sending: mail goes to the address as given.
func NormalEmail(email string) string {
	email = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(email)), ".")
	local, host, ok := strings.Cut(email, "@")
	if !ok {
		return email
	}
	host = strings.TrimSuffix(host, ".")
	if i := strings.IndexByte(local, '+'); i > 0 {
		local = local[:i]
	}
	if host == "googlemail.com" {
		host = "gmail.com"
	}
	if host == "gmail.com" {
		local = strings.ReplaceAll(local, ".", "")
	}
	return local + "@" + host
}

// SameEmail reports whether a and b name one mailbox (see NormalEmail).
// An empty address is nobody's.
func SameEmail(a, b string) bool {
	return a != "" && b != "" && NormalEmail(a) == NormalEmail(b)
}
