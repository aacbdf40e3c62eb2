package web

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// A resume schema whose root is an object of simple properties becomes a
// form: strings (with enum, or oneOf of {const, title}, a select; with
// format email, uri, date or date-time, an input of that kind), numbers,
// integers, booleans, nested objects, and arrays of simple values (one per
// line). Labels come from title, hints from description, and enum labels
// from enumNames. A schema using anything else (references, other
// combinators, arrays of objects) gets the JSON editor instead; the server
// validates against the whole schema either way, and the form's own checks
// (types, the four formats) come first, in plain words.

type schemaNode struct {
	Type        any                    `json:"type"`
	Title       string                 `json:"title"`
	Description string                 `json:"description"`
	Format      string                 `json:"format"`
	Enum        []any                  `json:"enum"`
	EnumNames   []string               `json:"enumNames"`
	Properties  map[string]*schemaNode `json:"properties"`
	Required    []string               `json:"required"`
	Items       *schemaNode            `json:"items"`
	Default     any                    `json:"default"`
	// A number's bounds, kept as written for the input's min and max.
	Minimum json.Number `json:"minimum"`
	Maximum json.Number `json:"maximum"`
	// Present only to recognise what a form cannot express.
	Ref   string            `json:"$ref"`
	OneOf []json.RawMessage `json:"oneOf"`
	AnyOf []any             `json:"anyOf"`
	AllOf []any             `json:"allOf"`
	Not   any               `json:"not"`
	If    any               `json:"if"`
	// propertyOrder keeps the schema's own order of properties.
	propertyOrder []string
}

func (n *schemaNode) typeName() string {
	s, _ := n.Type.(string)
	return s
}

// FormFields turns a resume schema into form fields; ok is false when the
// schema needs the JSON editor.
func FormFields(schema json.RawMessage) ([]views.FormField, bool) {
	if len(schema) == 0 {
		return nil, false
	}
	root, err := parseSchema(schema)
	if err != nil || root.typeName() != "object" || len(root.Properties) == 0 {
		return nil, false
	}
	return objectFields(root, "")
}

func parseSchema(raw json.RawMessage) (*schemaNode, error) {
	var n schemaNode
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, err
	}
	// Property order, which a Go map loses, is read from the raw object,
	// and each property parsed the same way.
	var probe struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &probe); err == nil && len(probe.Properties) > 0 {
		var props map[string]json.RawMessage
		if err := json.Unmarshal(probe.Properties, &props); err != nil {
			return nil, err
		}
		n.propertyOrder = objectKeys(probe.Properties)
		for k, r := range props {
			child, err := parseSchema(r)
			if err != nil {
				return nil, err
			}
			n.Properties[k] = child
		}
	}
	return &n, nil
}

// objectKeys lists an object's keys in document order.
func objectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

func simple(n *schemaNode) bool {
	return n.Ref == "" && (n.OneOf == nil || choices(n) != nil) && n.AnyOf == nil && n.AllOf == nil && n.Not == nil && n.If == nil
}

// choices reads a oneOf whose every entry is {"const": "…", "title": "…"}
// as a select's options; nil when it is anything else.
func choices(n *schemaNode) []views.Option {
	var out []views.Option
	for _, raw := range n.OneOf {
		var c struct {
			Const *string `json:"const"`
			Title string  `json:"title"`
		}
		if err := json.Unmarshal(raw, &c); err != nil || c.Const == nil {
			return nil
		}
		out = append(out, views.Option{Value: *c.Const, Label: cmp.Or(c.Title, *c.Const)})
	}
	return out
}

// options are an enum's choices, labelled by enumNames (or a oneOf of
// consts); ok is false for an enum of other than strings.
func options(p *schemaNode) ([]views.Option, bool) {
	if p.OneOf != nil {
		return choices(p), true
	}
	var out []views.Option
	for i, e := range p.Enum {
		v, ok := e.(string)
		if !ok {
			return nil, false
		}
		label := v
		if i < len(p.EnumNames) && p.EnumNames[i] != "" {
			label = p.EnumNames[i]
		}
		out = append(out, views.Option{Value: v, Label: label})
	}
	return out, true
}

func objectFields(n *schemaNode, prefix string) ([]views.FormField, bool) {
	if !simple(n) {
		return nil, false
	}
	var out []views.FormField
	for _, name := range n.propertyOrder {
		p := n.Properties[name]
		if p == nil || !simple(p) {
			return nil, false
		}
		f := views.FormField{Pointer: prefix + "/" + escapePointer(name), Label: labelOf(name), Description: p.Description,
			Type: p.typeName(), Format: p.Format, Required: slices.Contains(n.Required, name)}
		if p.Title != "" {
			f.Label = p.Title
		}
		opts, ok := options(p)
		if !ok {
			return nil, false // enums of other types: the JSON editor
		}
		f.Options = opts
		switch f.Type {
		case "string":
		case "number", "integer":
			f.Min, f.Max = string(p.Minimum), string(p.Maximum)
		case "boolean":
			f.Checked = p.Default == true
		case "object":
			sub, ok := objectFields(p, f.Pointer)
			if !ok {
				return nil, false
			}
			f.Fields = sub
		case "array":
			if p.Items == nil || !simple(p.Items) {
				return nil, false
			}
			switch f.Items = p.Items.typeName(); f.Items {
			case "string", "number", "integer":
			default:
				return nil, false
			}
		default:
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

// labelOf makes a property's name readable when its schema has no title:
// "receiptIds" and "receipt_ids" read "Receipt ids".
func labelOf(name string) string {
	var b strings.Builder
	prev := ' '
	for i, r := range name {
		orig := r
		switch {
		case r == '_' || r == '-':
			r = ' '
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(prev):
			b.WriteRune(' ')
			r = unicode.ToLower(r)
		case i > 0:
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
		prev = orig
	}
	out := []rune(strings.TrimSpace(b.String()))
	if len(out) == 0 {
		return name
	}
	out[0] = unicode.ToUpper(out[0])
	return string(out)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// FormValue assembles the resume data from posted form values, keeping
// what was typed in the fields so that a refused form can be shown again.
// Values that cannot be read as their type or format are field errors, in
// plain words. A date and time typed without a zone (a datetime-local
// input) is read in the viewer's zone.
func FormValue(fields []views.FormField, form url.Values, zone *time.Location) (map[string]any, []views.FormField, []domain.FieldError) {
	out := map[string]any{}
	var errs []domain.FieldError
	shown := slices.Clone(fields)
	for i := range shown {
		f := &shown[i]
		key := f.Pointer[strings.LastIndex(f.Pointer, "/")+1:]
		key = strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")
		raw := strings.TrimSpace(form.Get(f.Name()))
		f.Value = raw
		switch f.Type {
		case "object":
			v, sub, e := FormValue(f.Fields, form, zone)
			f.Fields, errs = sub, append(errs, e...)
			if len(v) > 0 || f.Required {
				out[key] = v
			}
		case "boolean":
			f.Checked = raw == "true"
			out[key] = f.Checked
		case "array":
			items, bad := formItems(f.Items, raw)
			if bad != "" {
				errs = append(errs, domain.FieldError{Field: f.Pointer, Message: bad})
				continue
			}
			if len(items) > 0 || f.Required {
				out[key] = items
			}
		default:
			if raw == "" {
				continue // absent; "required" is the schema's to report
			}
			v, err := scalar(f.Type, raw)
			if err != nil {
				errs = append(errs, domain.FieldError{Field: f.Pointer, Message: typeWords(f.Type)})
				continue
			}
			if text, isText := v.(string); isText {
				var ok bool
				if v, ok = formatted(f.Format, text, zone); !ok {
					errs = append(errs, domain.FieldError{Field: f.Pointer, Message: formatWords[f.Format]})
					continue
				}
			}
			out[key] = v
		}
	}
	return out, shown, errs
}

// AllFormErrors adds to a form's own errors (values that do not read as
// their type or format) what the schema finds wrong with the rest, so a
// person sees every error of the form at once. A field the form refused
// is absent from value: the schema's word that it is missing is dropped
// for it, as its own error says more.
func AllFormErrors(schema json.RawMessage, value map[string]any, errs []domain.FieldError) []domain.FieldError {
	data, err := json.Marshal(value)
	if err != nil {
		return errs
	}
	ve, ok := errors.AsType[*domain.ValidationError](ValidateResumeData(schema, data))
	if !ok {
		return errs
	}
	refused := map[string]bool{}
	for _, e := range errs {
		refused[e.Field] = true
	}
	out := slices.Clone(errs)
	for _, e := range ve.Fields {
		ptr := strings.TrimPrefix(e.Field, "/resumeData")
		if !strings.HasPrefix(e.Message, "missing propert") {
			if !refused[ptr] {
				out = append(out, e)
			}
			continue
		}
		for _, m := range missingProperty.FindAllStringSubmatch(e.Message, -1) {
			if field := ptr + "/" + escapePointer(m[1]); !refused[field] {
				out = append(out, domain.FieldError{Field: ptr, Message: "missing property '" + m[1] + "'"})
			}
		}
	}
	return out
}

// formItems reads an array's lines; bad says in words why one does not
// read as the item type.
func formItems(typ, raw string) ([]any, string) {
	items := []any{}
	for line := range strings.SplitSeq(raw, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		v, err := scalar(typ, line)
		if err != nil {
			return nil, fmt.Sprintf("%q: each line %s", line, strings.ToLower(typeWords(typ)))
		}
		items = append(items, v)
	}
	return items, ""
}

func scalar(typ, s string) (any, error) {
	switch typ {
	case "number":
		return strconv.ParseFloat(s, 64)
	case "integer":
		return strconv.ParseInt(s, 10, 64)
	}
	return s, nil
}

// typeWords says what a value of a type must be.
func typeWords(typ string) string {
	switch typ {
	case "integer":
		return "Must be a whole number"
	case "number":
		return "Must be a number"
	case "boolean":
		return "Must be yes or no"
	}
	return "Must be text"
}

// formatWords say, for each format a form checks, what to enter.
var formatWords = map[string]string{
	"email":     "Enter an email address like name@example.com",
	"uri":       "Enter a full web address like https://example.com/page",
	"date":      "Enter a date like 2026-11-25",
	"date-time": "Enter a date and time like 2026-11-25 14:30",
}

// formatted checks a string against the formats a form enforces (email,
// uri, date, date-time) and returns the value to send: a date and time
// becomes RFC 3339. ok is false for a value its format refuses.
func formatted(format, s string, zone *time.Location) (v any, ok bool) {
	switch format {
	case "email":
		return s, domain.IsEmailAddress(s)
	case "uri":
		u, err := url.Parse(s)
		return s, err == nil && u.Scheme != "" && (u.Host != "" || u.Opaque != "")
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return s, err == nil
	case "date-time":
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.Format(time.RFC3339Nano), true
		}
		for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04"} {
			if t, err := time.ParseInLocation(layout, s, zone); err == nil {
				return t.Format(time.RFC3339), true
			}
		}
		return nil, false
	}
	return s, true
}

var missingProperty = regexp.MustCompile(`'([^']+)'`)

// AttachErrors puts each field error on the field it names, in plain
// words. The schema reports a missing property on its parent object; it
// goes to the property. Errors no field claims are returned.
func AttachErrors(fields []views.FormField, errs []domain.FieldError) []domain.FieldError {
	var left []domain.FieldError
	for _, e := range errs {
		ptr := strings.TrimPrefix(e.Field, "/resumeData")
		targets := []string{ptr}
		msg := plainWords(e.Message)
		if strings.HasPrefix(e.Message, "missing propert") {
			targets = nil
			for _, m := range missingProperty.FindAllStringSubmatch(e.Message, -1) {
				targets = append(targets, ptr+"/"+escapePointer(m[1]))
			}
		}
		for _, t := range targets {
			if !setError(fields, t, msg) {
				left = append(left, e)
			}
		}
	}
	return left
}

// schemaWords turn the schema validator's messages into plain words; the
// first that matches wins.
var schemaWords = []struct {
	re    *regexp.Regexp
	words func(m []string) string
}{
	{regexp.MustCompile(`^missing propert`), func([]string) string { return "This field is required" }},
	{regexp.MustCompile(`^maximum: got .*, want (.*)$`), func(m []string) string { return "Must be " + m[1] + " or less" }},
	{regexp.MustCompile(`^minimum: got .*, want (.*)$`), func(m []string) string { return "Must be " + m[1] + " or more" }},
	{regexp.MustCompile(`^exclusiveMaximum: got .*, want (.*)$`), func(m []string) string { return "Must be less than " + m[1] }},
	{regexp.MustCompile(`^exclusiveMinimum: got .*, want (.*)$`), func(m []string) string { return "Must be more than " + m[1] }},
	{regexp.MustCompile(`^multipleOf: got .*, want (.*)$`), func(m []string) string { return "Must be a multiple of " + m[1] }},
	{regexp.MustCompile(`^minLength: got \d+, want 1$`), func([]string) string { return "This field is required" }},
	{regexp.MustCompile(`^minLength: got \d+, want (\d+)$`), func(m []string) string { return "Must be at least " + m[1] + " characters" }},
	{regexp.MustCompile(`^maxLength: got \d+, want (\d+)$`), func(m []string) string { return "Must be " + m[1] + " characters or fewer" }},
	{regexp.MustCompile(`^minItems: got \d+, want 1$`), func([]string) string { return "Enter at least one, one per line" }},
	{regexp.MustCompile(`^minItems: got \d+, want (\d+)$`), func(m []string) string { return "Enter at least " + m[1] + ", one per line" }},
	{regexp.MustCompile(`^maxItems: got \d+, want (\d+)$`), func(m []string) string { return "Enter at most " + m[1] + ", one per line" }},
	{regexp.MustCompile(`^value must be `), func([]string) string { return "Choose one of the options" }},
	{regexp.MustCompile(`does not match pattern`), func([]string) string { return "Is not in the form this field asks for" }},
	{regexp.MustCompile(`^got \w+, want (\w+)$`), func(m []string) string { return typeWords(m[1]) }},
	{regexp.MustCompile(`is not valid email`), func([]string) string { return formatWords["email"] }},
	{regexp.MustCompile(`is not valid (uri|iri)`), func([]string) string { return formatWords["uri"] }},
	{regexp.MustCompile(`is not valid date-time`), func([]string) string { return formatWords["date-time"] }},
	{regexp.MustCompile(`is not valid date`), func([]string) string { return formatWords["date"] }},
	{regexp.MustCompile(`^items at (\d+) and (\d+) are equal`), func([]string) string { return "Each line must be different" }},
}

// plainWords is a schema validator's message as a person reads it; one it
// does not know keeps its words, capitalised.
func plainWords(msg string) string {
	for _, w := range schemaWords {
		if m := w.re.FindStringSubmatch(msg); m != nil {
			return w.words(m)
		}
	}
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

func setError(fields []views.FormField, ptr, msg string) bool {
	for i := range fields {
		if fields[i].Pointer == ptr {
			if fields[i].Error != "" {
				fields[i].Error += ". "
			}
			fields[i].Error += msg
			return true
		}
		if strings.HasPrefix(ptr, fields[i].Pointer+"/") && setError(fields[i].Fields, ptr, msg) {
			return true
		}
	}
	return false
}

// commentRule reads from a review's resume schema whether its comment is
// required: always (the root requires "comment", or its minLength is at
// least 1 and it is required), or only to reject (an if/then, also inside
// allOf, whose if says "approved": false and whose then requires it).
func commentRule(schema json.RawMessage) views.CommentRule {
	if len(schema) == 0 {
		return views.CommentOptional
	}
	var root struct {
		Required []string `json:"required"`
		commentCondition
		AllOf []commentCondition `json:"allOf"`
	}
	if err := json.Unmarshal(schema, &root); err != nil {
		return views.CommentOptional
	}
	if slices.Contains(root.Required, "comment") {
		return views.CommentRequired
	}
	for _, c := range append([]commentCondition{root.commentCondition}, root.AllOf...) {
		if c.rejectNeedsComment() {
			return views.CommentRequiredToReject
		}
	}
	return views.CommentOptional
}

// commentCondition is an if/then over an approval's data.
type commentCondition struct {
	If *struct {
		Properties struct {
			Approved *struct {
				Const *bool `json:"const"`
				Enum  []any `json:"enum"`
			} `json:"approved"`
		} `json:"properties"`
	} `json:"if"`
	Then *struct {
		Required []string `json:"required"`
	} `json:"then"`
}

func (c commentCondition) rejectNeedsComment() bool {
	if c.If == nil || c.Then == nil || c.If.Properties.Approved == nil || !slices.Contains(c.Then.Required, "comment") {
		return false
	}
	a := c.If.Properties.Approved
	return (a.Const != nil && !*a.Const) || (len(a.Enum) == 1 && a.Enum[0] == false)
}
