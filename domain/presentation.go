package domain

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// FieldFormat says how a presentation field's value is shown to a person.
// Values are kept as JSON and formatted when shown, in the viewer's locale
// and time zone.
type FieldFormat string

// Field formats. Money carries its ISO 4217 currency after a colon:
// "money:EUR".
const (
	FormatText     FieldFormat = "text"
	FormatMoney    FieldFormat = "money"
	FormatDate     FieldFormat = "date"
	FormatDateTime FieldFormat = "datetime"
	FormatEmail    FieldFormat = "email"
	FormatURL      FieldFormat = "url"
	FormatNumber   FieldFormat = "number"
)

// Kind is the format without its argument: "money" for "money:EUR". The
// empty format is text.
func (f FieldFormat) Kind() FieldFormat {
	if f == "" {
		return FormatText
	}
	k, _, _ := strings.Cut(string(f), ":")
	return FieldFormat(k)
}

// Currency is the currency of a money format, "" for any other.
func (f FieldFormat) Currency() string {
	k, cur, ok := strings.Cut(string(f), ":")
	if !ok || FieldFormat(k) != FormatMoney {
		return ""
	}
	return cur
}

// Check returns nil for a defined format: one of the constants, money with
// a three-letter upper-case currency code.
func (f FieldFormat) Check() error {
	switch f.Kind() {
	case FormatText, FormatDate, FormatDateTime, FormatEmail, FormatURL, FormatNumber:
		if strings.Contains(string(f), ":") {
			return Invalid("field format %q takes no argument", f)
		}
		return nil
	case FormatMoney:
		cur := f.Currency()
		if len(cur) != 3 || strings.IndexFunc(cur, func(r rune) bool { return r < 'A' || r > 'Z' }) >= 0 {
			return Invalid("field format %q needs a currency code: money:EUR, money:USD", f)
		}
		return nil
	}
	return Invalid("field format %q is not one of text, money:<currency>, date, datetime, email, url, number", f)
}

// Field is one label/value pair of a presentation: the amount, the
// requester, the due date. Value is any JSON value; an empty value is one
// whose template pointed nowhere.
type Field struct {
	Label  string          `json:"label"`
	Value  json.RawMessage `json:"value"`
	Format FieldFormat     `json:"format,omitempty"`
}

// Presentation is how a suspension that waits for a person is shown to
// people: a title they recognise, a few fields, and the human name of its
// reason. It is fixed when the suspension is created, beside its
// checkpoint.
type Presentation struct {
	Title       string  `json:"title,omitempty"`
	Fields      []Field `json:"fields,omitempty"`
	ReasonLabel string  `json:"reasonLabel,omitempty"`
}

// ReasonLabelOf is the human name of a reason when its author gave none:
// "awaiting_documentation" reads "Awaiting documentation".
func ReasonLabelOf(reason string) string {
	words := strings.FieldsFunc(reason, func(r rune) bool { return r == '_' || r == '-' || r == '.' || unicode.IsSpace(r) })
	if len(words) == 0 {
		return ""
	}
	r := []rune(strings.Join(words, " "))
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// fieldValue encodes a Go value for a field; a value that cannot be
// encoded is kept as its printed form.
func fieldValue(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprint(v))
	}
	return b
}

// NewField is a field with a Go value, encoded as JSON.
func NewField(label string, value any, format FieldFormat) Field {
	return Field{Label: label, Value: fieldValue(value), Format: format}
}

// checkFields vets a pause's fields before they are stored: each has a
// label and a defined format, and its value is JSON the databases keep
// (an empty value is null).
func checkFields(fields []Field) ([]Field, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	out := make([]Field, len(fields))
	for i, f := range fields {
		if strings.TrimSpace(f.Label) == "" {
			return nil, &OrchestrationError{Message: fmt.Sprintf("presentation field %d has no label", i)}
		}
		if err := f.Format.Check(); err != nil {
			return nil, &OrchestrationError{Message: fmt.Sprintf("presentation field %q: %v", f.Label, err)}
		}
		if len(f.Value) == 0 {
			f.Value = json.RawMessage("null")
		}
		v, err := EncodeJSON(fmt.Sprintf("the value of presentation field %q", f.Label), f.Value, 0, CodeValidation)
		if err != nil {
			return nil, err
		}
		f.Value = v
		out[i] = f
	}
	return out, nil
}
