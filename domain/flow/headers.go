package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

// HeaderValue is the value of an http step's header: a literal string, or
// {"$secret": "NAME"}, the name of a variable in the server's environment
// whose value is read at each call. Header values are write-only: a
// document is shown with literal values masked (see RedactDocument), so a
// credential in a document is never read back; a secret reference keeps
// it out of the document altogether.
type HeaderValue struct {
	Value  string // a literal value
	Secret string // the name of a secret, when the value is one
}

// secretMember is the one member of a secret reference.
const secretMember = "$secret"

// RedactedValue stands in for a literal header value wherever a document
// is shown.
const RedactedValue = "***"

var errHeaderValue = errors.New(`a header value is a string or {"$secret": "NAME"}`)

// UnmarshalJSON reads a string or a secret reference. Its errors name no
// value: what was written there may be a credential.
func (h *HeaderValue) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*h = HeaderValue{Value: s}
		return nil
	}
	var ref map[string]json.RawMessage
	if err := json.Unmarshal(b, &ref); err != nil || ref == nil {
		return errHeaderValue
	}
	raw, ok := ref[secretMember]
	if !ok || len(ref) != 1 {
		return errors.New(`a secret reference has exactly one member, "$secret"`)
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil || !ValidSecretName(name) {
		return errors.New(`"$secret" is the name of an environment variable: upper-case letters, digits and _, not starting with a digit`)
	}
	*h = HeaderValue{Secret: name}
	return nil
}

// MarshalJSON writes the value as a document states it.
func (h HeaderValue) MarshalJSON() ([]byte, error) {
	if h.Secret != "" {
		return json.Marshal(map[string]string{secretMember: h.Secret})
	}
	return json.Marshal(h.Value)
}

// ValidSecretName reports whether name can name an environment variable
// holding a secret: [A-Z_][A-Z0-9_]*.
func ValidSecretName(name string) bool {
	for i, c := range []byte(name) {
		if !(c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return name != ""
}

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

// headers reads an http step's headers one at a time, so that a bad value
// is reported at its own path.
func (v *validator) headers(path string, raw json.RawMessage) map[string]HeaderValue {
	var fields map[string]json.RawMessage
	v.decode(path, raw, &fields)
	if fields == nil {
		return nil
	}
	out := make(map[string]HeaderValue, len(fields))
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		p := memberPath(path, name)
		var hv HeaderValue
		switch {
		case !ValidHeaderName(name):
			v.add(p, "is not a valid header name")
		case string(bytes.TrimSpace(fields[name])) == "null":
			v.add(p, "%v", errHeaderValue)
		default:
			v.decode(p, fields[name], &hv)
			if !validHeaderValue(hv.Value) {
				v.add(p, "a header value may not hold a control character")
			}
		}
		out[name] = hv
	}
	return out
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

// RedactDocument returns a stored document body as it may be shown: in
// canonical form, each literal value of an http step's headers replaced by
// RedactedValue, a secret reference left as it is (its name is no
// secret). Anything in a headers field that is neither is masked too.
func RedactDocument(body []byte) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("redact document: %w", err)
	}
	m, _ := doc.(map[string]any)
	steps, _ := m["steps"].([]any)
	for _, s := range steps {
		st, _ := s.(map[string]any)
		h, ok := st["headers"]
		if !ok || h == nil {
			continue
		}
		hs, ok := h.(map[string]any)
		if !ok {
			st["headers"] = RedactedValue
			continue
		}
		for k, v := range hs {
			hs[k] = redactedHeader(v)
		}
	}
	return encodeCanonical(doc)
}

// redactedHeader is a header value as it may be shown.
func redactedHeader(v any) any {
	if ref, ok := v.(map[string]any); ok && len(ref) == 1 {
		if name, ok := ref[secretMember].(string); ok && ValidSecretName(name) {
			return v
		}
	}
	return RedactedValue
}
