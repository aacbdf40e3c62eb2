package flow

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

// ValidHeaderName reports whether name is an HTTP field name: a token of
// RFC 9110.
func ValidHeaderName(name string) bool {
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return name != ""
}

// validHeaderValue reports whether v can be sent as a field value: no
// control character but the horizontal tab.
func validHeaderValue(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f })
}

// RefusedResponseHeader says why a workflow's response (a webhook step's
// responseToSend) may not set the header name, or "" when it may. The
// response is served on the app's own origin, so it may not act on the
// origin (cookies, stored data, cross-origin access, transport security),
// send the caller elsewhere, replace the server's security headers, or
// frame the message, which is the server's to do.
func RefusedResponseHeader(name string) string {
	n := strings.ToLower(name)
	switch {
	case !ValidHeaderName(name):
		return "is not a valid header name"
	case slices.Contains([]string{"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length"}, n):
		return "frames the connection or the body, which the server does"
	case slices.Contains([]string{"content-security-policy", "x-content-type-options", "referrer-policy"}, n):
		return "is one of the server's security headers, which a workflow may not replace"
	case n == "location" || n == "refresh":
		return "would send the caller elsewhere from the app's origin"
	case strings.HasPrefix(n, "access-control-"):
		return "would open the app's origin to other sites (CORS)"
	case slices.Contains([]string{"set-cookie", "set-cookie2", "clear-site-data", "strict-transport-security", "alt-svc"}, n):
		return "acts on the app's whole origin"
	}
	return ""
}

// memberPath is the path of a member of the object at path: .name, or
// ["name"] for a name a dot would not keep apart.
func memberPath(path, name string) string {
	if name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return path + "." + name
	}
	return path + "[" + strconv.Quote(name) + "]"
}

// response checks a webhook step's responseToSend.
func (v *validator) response(path string, r *domain.HTTPResponse) {
	if r == nil {
		return
	}
	if r.Status != 0 && (r.Status < 200 || r.Status > 599) {
		v.add(path+".status", "%d is not an HTTP status from 200 to 599", r.Status)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Headers)) {
		p := memberPath(path+".headers", name)
		if why := RefusedResponseHeader(name); why != "" {
			v.add(p, "%s %s", name, why)
		} else if !validHeaderValue(r.Headers[name]) {
			v.add(p, "a header value may not hold a control character")
		}
	}
}
