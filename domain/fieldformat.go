package domain

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Locale is how numbers, money and dates are written for one viewer. A
// small table of locales is enough for the few fields a request shows;
// the default is English as written in the United States.
type Locale struct {
	Tag string // "en-US", "de", …
	// Decimal and Group separate the fraction and thousands.
	Decimal, Group string
	// SymbolAfter writes money as "389,00 €" instead of "€389.00";
	// SymbolSpace puts a space between a leading symbol and the amount.
	SymbolAfter, SymbolSpace bool
	// DateLayout and DateTimeLayout are Go time layouts.
	DateLayout, DateTimeLayout string
}

// nbsp keeps an amount and its symbol (and groups of digits) on one line.
const nbsp = "\u00a0"

var (
	localeEnUS = Locale{Tag: "en-US", Decimal: ".", Group: ",", DateLayout: "Jan 2, 2006", DateTimeLayout: "Jan 2, 2006, 3:04 PM MST"}
	localeEnGB = Locale{Tag: "en-GB", Decimal: ".", Group: ",", DateLayout: "2 Jan 2006", DateTimeLayout: "2 Jan 2006, 15:04 MST"}
	locales    = map[string]Locale{
		"en":    localeEnUS,
		"en-us": localeEnUS,
		"en-gb": localeEnGB,
		"en-ie": localeEnGB,
		"en-au": {Tag: "en-AU", Decimal: ".", Group: ",", DateLayout: "2 Jan 2006", DateTimeLayout: "2 Jan 2006, 3:04 PM MST"},
		"de":    {Tag: "de", Decimal: ",", Group: ".", SymbolAfter: true, DateLayout: "02.01.2006", DateTimeLayout: "02.01.2006, 15:04 MST"},
		"fr":    {Tag: "fr", Decimal: ",", Group: "\u202f", SymbolAfter: true, DateLayout: "02/01/2006", DateTimeLayout: "02/01/2006 15:04 MST"},
		"es":    {Tag: "es", Decimal: ",", Group: ".", SymbolAfter: true, DateLayout: "02/01/2006", DateTimeLayout: "02/01/2006, 15:04 MST"},
		"it":    {Tag: "it", Decimal: ",", Group: ".", SymbolAfter: true, DateLayout: "02/01/2006", DateTimeLayout: "02/01/2006, 15:04 MST"},
		"pt":    {Tag: "pt", Decimal: ",", Group: ".", SymbolAfter: true, DateLayout: "02/01/2006", DateTimeLayout: "02/01/2006, 15:04 MST"},
		"nl":    {Tag: "nl", Decimal: ",", Group: ".", SymbolSpace: true, DateLayout: "02-01-2006", DateTimeLayout: "02-01-2006 15:04 MST"},
	}
)

// LocaleFor picks the best locale for an Accept-Language header: the
// first tag, by quality, whose language (or language and region) the
// table knows. Unknown or missing preferences read as en-US.
func LocaleFor(acceptLanguage string) Locale {
	type pref struct {
		tag string
		q   float64
	}
	var prefs []pref
	for part := range strings.SplitSeq(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if tag = strings.ToLower(strings.TrimSpace(tag)); tag != "" && q > 0 {
			prefs = append(prefs, pref{tag, q})
		}
	}
	best, bestQ := localeEnUS, 0.0
	for _, p := range prefs {
		if p.q <= bestQ {
			continue
		}
		lang, _, _ := strings.Cut(p.tag, "-")
		if l, ok := locales[p.tag]; ok {
			best, bestQ = l, p.q
		} else if l, ok := locales[lang]; ok {
			best, bestQ = l, p.q
		}
	}
	return best
}

// Formatter writes presentation fields for one viewer: in their locale
// and time zone. The zero value writes en-US in UTC.
type Formatter struct {
	Locale Locale
	Zone   *time.Location
}

// FieldView is a field ready to show: its text, and a link or a machine
// time when it has one. Empty marks a value that pointed nowhere.
type FieldView struct {
	Label    string
	Text     string
	Href     string // mailto: or http(s) only
	Datetime string // RFC 3339, for a <time> element
	Empty    bool
}

func (f Formatter) locale() Locale {
	if f.Locale.Decimal == "" {
		return localeEnUS
	}
	return f.Locale
}

func (f Formatter) zone() *time.Location {
	if f.Zone == nil {
		return time.UTC
	}
	return f.Zone
}

// Fields formats each field.
func (f Formatter) Fields(fields []Field) []FieldView {
	out := make([]FieldView, len(fields))
	for i, fd := range fields {
		out[i] = f.Field(fd)
	}
	return out
}

// Field formats one field by its format. A value that does not read as its
// format (a word where money was promised) is shown as plain text, never
// dropped.
func (f Formatter) Field(fd Field) FieldView {
	v := FieldView{Label: fd.Label}
	raw := bytes.TrimSpace(fd.Value)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == `""` {
		v.Empty = true
		return v
	}
	text := plainText(raw)
	v.Text = text
	switch fd.Format.Kind() {
	case FormatMoney:
		if s, ok := f.Money(text, fd.Format.Currency()); ok {
			v.Text = s
		}
	case FormatNumber:
		if s, ok := f.Number(text); ok {
			v.Text = s
		}
	case FormatDate:
		if d, ok := parseDate(text); ok {
			v.Text, v.Datetime = d.Format(f.locale().DateLayout), d.Format(time.DateOnly)
		}
	case FormatDateTime:
		if t, err := time.Parse(time.RFC3339Nano, text); err == nil {
			v.Text, v.Datetime = f.DateTime(t), t.UTC().Format(time.RFC3339)
		}
	case FormatEmail:
		if IsEmailAddress(text) {
			v.Href = "mailto:" + text
		}
	case FormatURL:
		if u, err := url.Parse(text); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			v.Href = u.String()
		}
	}
	return v
}

// plainText is a JSON value as text: a string's contents, anything else
// in its compact JSON form.
func plainText(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func parseDate(s string) (time.Time, bool) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d, true
	}
	// A full timestamp given for a date keeps its own calendar day.
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), true
	}
	return time.Time{}, false
}

// DateTime writes t in the viewer's zone and locale.
func (f Formatter) DateTime(t time.Time) string {
	return t.In(f.zone()).Format(f.locale().DateTimeLayout)
}

// currencies are the symbols and minor digits of the currencies people
// most often see; any other is written by its code with two digits.
var currencies = map[string]struct {
	symbol string
	digits int
}{
	"EUR": {"€", 2}, "USD": {"$", 2}, "GBP": {"£", 2}, "JPY": {"¥", 0}, "CHF": {"CHF", 2},
	"CAD": {"CA$", 2}, "AUD": {"A$", 2}, "SEK": {"kr", 2}, "NOK": {"kr", 2}, "DKK": {"kr.", 2}, "KRW": {"₩", 0},
}

// Money writes an amount in a currency: "€389.00" in English,
// "389,00 €" in German. ok is false when s is not a number.
func (f Formatter) Money(s, currency string) (string, bool) {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", false
	}
	c, known := currencies[currency]
	if !known {
		c.symbol, c.digits = currency, 2
	}
	l := f.locale()
	neg := n < 0
	amount := l.group(strconv.FormatFloat(abs(n), 'f', c.digits, 64))
	var out string
	switch {
	case l.SymbolAfter:
		out = amount + nbsp + c.symbol
	case l.SymbolSpace || isCode(c.symbol):
		out = c.symbol + nbsp + amount
	default:
		out = c.symbol + amount
	}
	if neg {
		out = "-" + out
	}
	return out, true
}

// Number writes a number with the locale's separators, keeping the
// fraction digits it has. ok is false when s is not a number.
func (f Formatter) Number(s string) (string, bool) {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", false
	}
	out := f.locale().group(strconv.FormatFloat(abs(n), 'f', -1, 64))
	if n < 0 {
		out = "-" + out
	}
	return out, true
}

// group puts the locale's separators into a plain decimal "1234.5".
func (l Locale) group(plain string) string {
	whole, frac, hasFrac := strings.Cut(plain, ".")
	var b strings.Builder
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteString(l.Group)
		}
		b.WriteRune(d)
	}
	if hasFrac {
		b.WriteString(l.Decimal)
		b.WriteString(frac)
	}
	return b.String()
}

// isCode reports whether a symbol is letters ("CHF"), which a space must
// part from the digits.
func isCode(symbol string) bool {
	return strings.IndexFunc(symbol, func(r rune) bool { return r < 'A' || r > 'Z' }) < 0
}

func abs(n float64) float64 {
	if n < 0 {
		return -n
	}
	return n
}
