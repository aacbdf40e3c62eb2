package domain

import (
	"testing"
	"time"
)

func TestLocaleFor(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]string{
		"":                             "en-US",
		"de-DE,de;q=0.9,en;q=0.8":      "de",
		"en-GB,en;q=0.9":               "en-GB",
		"xx, fr;q=0.5, de;q=0.7":       "de",
		"de;q=0, fr":                   "fr",
		"zz-ZZ":                        "en-US",
		"en-US;q=0.2, nl-BE;q=0.9, *":  "nl",
		"garbage;;;q=abc,,,":           "en-US",
		"pt-BR":                        "pt",
		"EN-gb":                        "en-GB",
		"it;q=0.9, es;q=0.95, en;q=.1": "es",
	} {
		if got := LocaleFor(header).Tag; got != want {
			t.Errorf("LocaleFor(%q) = %s; want %s", header, got, want)
		}
	}
}

func TestFormatterFields(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	en := Formatter{}
	de := Formatter{Locale: LocaleFor("de"), Zone: berlin}
	gb := Formatter{Locale: LocaleFor("en-GB"), Zone: berlin}
	fr := Formatter{Locale: LocaleFor("fr")}
	f := func(value any, format FieldFormat) Field { return NewField("X", value, format) }
	for _, tt := range []struct {
		name  string
		fm    Formatter
		field Field
		text  string
		href  string
		dt    string
	}{
		{"money en", en, f(389, "money:EUR"), "€389.00", "", ""},
		{"money de", de, f(389, "money:EUR"), "389,00\u00a0€", "", ""},
		{"money grouped en", en, f(1234567.5, "money:USD"), "$1,234,567.50", "", ""},
		{"money grouped de", de, f(1234567.5, "money:USD"), "1.234.567,50\u00a0$", "", ""},
		{"money grouped fr", fr, f(1234.5, "money:EUR"), "1\u202f234,50\u00a0€", "", ""},
		{"money from a string", en, f("12.3", "money:GBP"), "£12.30", "", ""},
		{"money without minor units", en, f(1500, "money:JPY"), "¥1,500", "", ""},
		{"money code", en, f(10, "money:CHF"), "CHF\u00a010.00", "", ""},
		{"money unknown currency", en, f(10, "money:XYZ"), "XYZ\u00a010.00", "", ""},
		{"money negative", en, f(-5, "money:EUR"), "-€5.00", "", ""},
		{"money not a number", en, f("soon", "money:EUR"), "soon", "", ""},
		{"number en", en, f(12345.678, "number"), "12,345.678", "", ""},
		{"number de", de, f(12345.678, "number"), "12.345,678", "", ""},
		{"number small", en, f(7, "number"), "7", "", ""},
		{"date en", en, f("2026-11-25", "date"), "Nov 25, 2026", "", "2026-11-25"},
		{"date de", de, f("2026-11-25", "date"), "25.11.2026", "", "2026-11-25"},
		{"date keeps its day", de, f("2026-11-25T23:30:00-05:00", "date"), "25.11.2026", "", "2026-11-25"},
		{"date not a date", en, f("tomorrow", "date"), "tomorrow", "", ""},
		{"datetime in the viewer's zone", de, f("2026-11-25T23:30:00Z", "datetime"), "26.11.2026, 00:30 CET", "", "2026-11-25T23:30:00Z"},
		{"datetime en-GB", gb, f("2026-07-01T08:00:00Z", "datetime"), "1 Jul 2026, 10:00 CEST", "", "2026-07-01T08:00:00Z"},
		{"datetime UTC by default", en, f("2026-11-25T23:30:00+01:00", "datetime"), "Nov 25, 2026, 10:30 PM UTC", "", "2026-11-25T22:30:00Z"},
		{"email", en, f("ada@example.com", "email"), "ada@example.com", "mailto:ada@example.com", ""},
		{"email with a name is text", en, f("Ada <ada@example.com>", "email"), "Ada <ada@example.com>", "", ""},
		{"email not an email", en, f("not-an-email", "email"), "not-an-email", "", ""},
		{"url", en, f("https://example.com/a?b=1", "url"), "https://example.com/a?b=1", "https://example.com/a?b=1", ""},
		{"url javascript is text", en, f("javascript:alert(1)", "url"), "javascript:alert(1)", "", ""},
		{"url without host is text", en, f("http:/x", "url"), "http:/x", "", ""},
		{"text", en, f("Flight <Lisbon>", "text"), "Flight <Lisbon>", "", ""},
		{"text of a number", en, f(3, ""), "3", "", ""},
		{"text of an object", en, f(map[string]int{"a": 1}, "text"), `{"a":1}`, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.fm.Field(tt.field)
			if got.Text != tt.text || got.Href != tt.href || got.Datetime != tt.dt || got.Label != "X" || got.Empty {
				t.Errorf("Field = %+v; want text %q, href %q, datetime %q", got, tt.text, tt.href, tt.dt)
			}
		})
	}
	for _, raw := range []string{"", "null", `""`} {
		if got := en.Field(Field{Label: "X", Value: []byte(raw)}); !got.Empty {
			t.Errorf("value %q is not empty: %+v", raw, got)
		}
	}
}
