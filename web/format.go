package web

import (
	"net/http"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// tzCookie holds the viewer's IANA time zone, set by app.js from the
// browser's own (Intl.DateTimeFormat().resolvedOptions().timeZone).
const tzCookie = "tz"

// FormatterFor writes presentation fields for the viewer of r: in the
// locale their browser asks for, and in their time zone (UTC until the
// browser has said which).
func FormatterFor(r *http.Request) domain.Formatter {
	f := domain.Formatter{Locale: domain.LocaleFor(r.Header.Get("Accept-Language")), Zone: time.UTC}
	if c, err := r.Cookie(tzCookie); err == nil {
		if loc, ok := zoneNamed(c.Value); ok {
			f.Zone = loc
		}
	}
	return f
}

// zones caches the zones browsers named; only names the zone database
// knows are kept, so the cache is bounded by that database.
var zones sync.Map

// zoneNamed loads an IANA zone by name. A name is at most 64 characters
// of letters, digits, '/', '_', '-' and '+': never a path out of the zone
// database.
func zoneNamed(name string) (*time.Location, bool) {
	if name == "" || len(name) > 64 || name[0] == '/' {
		return nil, false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '_' || r == '-' || r == '+') {
			return nil, false
		}
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), true
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return nil, false
	}
	zones.Store(name, loc)
	return loc, true
}
