package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// A resume schema whose root is an object of simple properties becomes a
// form: strings (with enum, a select; with format date, a date picker),
// numbers, integers, booleans, nested objects, and arrays of simple values
// (one per line). A schema using anything else (references, combinators,
// arrays of objects) gets the JSON editor instead; the server validates
// against the whole schema either way.

type schemaNode struct {
	Type        any                    `json:"type"`
	Title       string                 `json:"title"`
	Description string                 `json:"description"`
	Format      string                 `json:"format"`
	Enum        []any                  `json:"enum"`
	Properties  map[string]*schemaNode `json:"properties"`
	Required    []string               `json:"required"`
	Items       *schemaNode            `json:"items"`
	Default     any                    `json:"default"`
	// Present only to recognise what a form cannot express.
	Ref   string `json:"$ref"`
	OneOf []any  `json:"oneOf"`
	AnyOf []any  `json:"anyOf"`
	AllOf []any  `json:"allOf"`
	Not   any    `json:"not"`
	If    any    `json:"if"`
	// propertyOrder keeps the schema's own order of properties.
	propertyOrder []string
}

func (n *schemaNode) typeName() string {
	s, _ := n.Type.(string)
	return s
}

// formFields turns a resume schema into form fields; ok is false when the
// schema needs the JSON editor.
func formFields(schema json.RawMessage) ([]views.FormField, bool) {
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
	return n.Ref == "" && n.OneOf == nil && n.AnyOf == nil && n.AllOf == nil && n.Not == nil && n.If == nil
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
		f := views.FormField{Pointer: prefix + "/" + escapePointer(name), Label: name, Description: p.Description,
			Type: p.typeName(), Format: p.Format, Required: slices.Contains(n.Required, name)}
		if p.Title != "" {
			f.Label = p.Title
		}
		for _, e := range p.Enum {
			s, ok := e.(string)
			if !ok {
				return nil, false // enums of other types: the JSON editor
			}
			f.Enum = append(f.Enum, s)
		}
		switch f.Type {
		case "string", "number", "integer":
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

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// formValue assembles the resume data from posted form values, keeping
// what was typed in the fields so that a refused form can be shown again.
// Values that cannot be read as their type are field errors.
func formValue(fields []views.FormField, form url.Values) (map[string]any, []views.FormField, []domain.FieldError) {
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
			v, sub, e := formValue(f.Fields, form)
			f.Fields, errs = sub, append(errs, e...)
			if len(v) > 0 || f.Required {
				out[key] = v
			}
		case "boolean":
			f.Checked = raw == "true"
			out[key] = f.Checked
		case "array":
			var items []any
			for _, line := range strings.Split(raw, "\n") {
				if line = strings.TrimSpace(line); line == "" {
					continue
				}
				v, err := scalar(f.Items, line)
				if err != nil {
					errs = append(errs, domain.FieldError{Field: f.Pointer, Message: fmt.Sprintf("%q is not %s", line, article(f.Items))})
					continue
				}
				items = append(items, v)
			}
			if len(items) > 0 || f.Required {
				if items == nil {
					items = []any{}
				}
				out[key] = items
			}
		default:
			if raw == "" {
				continue // absent; "required" is the schema's to report
			}
			v, err := scalar(f.Type, raw)
			if err != nil {
				errs = append(errs, domain.FieldError{Field: f.Pointer, Message: fmt.Sprintf("%q is not %s", raw, article(f.Type))})
				continue
			}
			out[key] = v
		}
	}
	return out, shown, errs
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

func article(typ string) string {
	if typ == "integer" {
		return "an integer"
	}
	return "a " + typ
}

var missingProperty = regexp.MustCompile(`'([^']+)'`)

// attachErrors puts each field error on the field it names. The schema
// reports a missing property on its parent object; it goes to the property.
// Errors no field claims are returned.
func attachErrors(fields []views.FormField, errs []domain.FieldError) []domain.FieldError {
	var left []domain.FieldError
	for _, e := range errs {
		ptr := strings.TrimPrefix(e.Field, "/resumeData")
		targets := []string{ptr}
		if strings.HasPrefix(e.Message, "missing propert") {
			targets = nil
			for _, m := range missingProperty.FindAllStringSubmatch(e.Message, -1) {
				targets = append(targets, ptr+"/"+escapePointer(m[1]))
			}
		}
		for _, t := range targets {
			msg := e.Message
			if strings.HasPrefix(msg, "missing propert") {
				msg = "required"
			}
			if !setError(fields, t, msg) {
				left = append(left, e)
			}
		}
	}
	return left
}

func setError(fields []views.FormField, ptr, msg string) bool {
	for i := range fields {
		if fields[i].Pointer == ptr {
			if fields[i].Error != "" {
				fields[i].Error += "; "
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
