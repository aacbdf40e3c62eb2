package web

import (
	"net/http/httptest"
	"testing"
)

func TestFormatterForReadsLocaleAndZone(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ lang, tz, locale, zone string }{
		{"de-DE,de;q=0.9", "Europe/Berlin", "de", "Europe/Berlin"},
		{"", "", "en-US", "UTC"},
		{"fr", "Mars/Olympus", "fr", "UTC"},
		{"en-GB", "../../etc/passwd", "en-GB", "UTC"},
		{"en-GB", "/etc/localtime", "en-GB", "UTC"},
		{"en", "Local", "en-US", "UTC"},
		{"en", "America/Argentina/Buenos_Aires", "en-US", "America/Argentina/Buenos_Aires"},
	} {
		r := httptest.NewRequest("GET", "/inbox", nil)
		if tt.lang != "" {
			r.Header.Set("Accept-Language", tt.lang)
		}
		if tt.tz != "" {
			r.Header.Set("Cookie", tzCookie+"="+tt.tz)
		}
		f := FormatterFor(r)
		if f.Locale.Tag != tt.locale || f.Zone.String() != tt.zone {
			t.Errorf("%q, tz %q: locale %s, zone %s; want %s, %s", tt.lang, tt.tz, f.Locale.Tag, f.Zone, tt.locale, tt.zone)
		}
	}
}
