package mail

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// currencySymbols are the currencies written with a symbol before the
// amount; any other code follows the amount ("389.00 CHF").
var currencySymbols = map[string]string{"EUR": "€", "USD": "$", "GBP": "£", "JPY": "¥"}

// noDecimals are currencies without minor units.
var noDecimals = map[string]bool{"JPY": true, "KRW": true}

// FormatField writes a presentation field's value as a mail shows it, in
// English and UTC (a mail cannot know its reader's locale): money with
// its symbol and two decimals ("€1,389.00"), dates and times spelled out
// ("2 March 2026", "2 March 2026, 14:05 UTC"), text as it is. A value
// that does not fit its format is shown as it is; an empty one as "—".
func FormatField(f domain.Field) string {
	raw := bytes.TrimSpace(f.Value)
	if len(raw) == 0 || string(raw) == "null" {
		return "—"
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	s, isText := v.(string)
	if n, ok := v.(json.Number); ok {
		s = n.String()
	}
	switch f.Format.Kind() {
	case domain.FormatMoney:
		if out, ok := money(s, f.Format.Currency()); ok {
			return out
		}
	case domain.FormatDate:
		if t, ok := parseTime(s); ok {
			return t.Format("2 January 2006")
		}
	case domain.FormatDateTime:
		if t, ok := parseTime(s); ok {
			return t.UTC().Format("2 January 2006, 15:04 UTC")
		}
	case domain.FormatNumber:
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return groupThousands(s)
		}
	}
	if isText {
		return s
	}
	if _, ok := v.(json.Number); ok {
		return s
	}
	return string(raw)
}

// money writes amount (a decimal number) in currency.
func money(amount, currency string) (string, bool) {
	x, err := strconv.ParseFloat(strings.TrimSpace(amount), 64)
	if err != nil {
		return "", false
	}
	decimals := 2
	if noDecimals[currency] {
		decimals = 0
	}
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	n := groupThousands(strconv.FormatFloat(x, 'f', decimals, 64))
	if sym, ok := currencySymbols[currency]; ok {
		return sign + sym + n, true
	}
	return sign + n + " " + currency, true
}

// groupThousands puts commas between groups of three digits of a decimal
// number's integer part.
func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	if strings.ContainsAny(whole, "eE") {
		return sign + s
	}
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}

func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly, "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
