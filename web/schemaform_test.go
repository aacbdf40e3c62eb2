package web

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

const formSchema = `{
  "type": "object",
  "required": ["verdict", "amount"],
  "properties": {
    "verdict": {"type": "string", "enum": ["true", "false", "unclear"], "title": "Verdict", "description": "What the documents show"},
    "amount": {"type": "integer"},
    "ratio": {"type": "number"},
    "due": {"type": "string", "format": "date"},
    "urgent": {"type": "boolean", "default": true},
    "contact": {"type": "object", "required": ["email"], "properties": {"email": {"type": "string"}, "a/b": {"type": "string"}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "scores": {"type": "array", "items": {"type": "integer"}}
  }
}`

func TestFormFieldsFromSchema(t *testing.T) {
	fields, ok := FormFields(json.RawMessage(formSchema))
	if !ok {
		t.Fatal("a schema of simple properties gave no form")
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.Pointer+":"+f.Type)
	}
	want := []string{"/verdict:string", "/amount:integer", "/ratio:number", "/due:string", "/urgent:boolean", "/contact:object", "/tags:array", "/scores:array"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields %v; want %v (in the schema's order)", got, want)
	}
	if f := fields[0]; f.Label != "Verdict" || !f.Required || len(f.Options) != 3 || f.Description == "" {
		t.Errorf("verdict field = %+v", f)
	}
	if !fields[4].Checked || fields[3].Format != "date" {
		t.Errorf("default or format lost: %+v %+v", fields[4], fields[3])
	}
	if sub := fields[5].Fields; len(sub) != 2 || sub[0].Pointer != "/contact/email" || !sub[0].Required || sub[1].Pointer != "/contact/a~1b" {
		t.Errorf("nested fields = %+v", sub)
	}
	for _, s := range []string{
		`{"type":"array"}`,
		`{"type":"object","properties":{"x":{"$ref":"#/defs/x"}}}`,
		`{"type":"object","properties":{"x":{"oneOf":[{"type":"string"}]}}}`,
		`{"type":"object","properties":{"x":{"type":"array","items":{"type":"object"}}}}`,
		`{"type":"object","properties":{"x":{"enum":[1,2],"type":"integer"}}}`,
		`not json`,
	} {
		if _, ok := FormFields(json.RawMessage(s)); ok {
			t.Errorf("schema %s gave a form; want the JSON editor", s)
		}
	}
}

func TestFormValueAssemblesTypedData(t *testing.T) {
	fields, _ := FormFields(json.RawMessage(formSchema))
	form := url.Values{
		"f/verdict": {"unclear"}, "f/amount": {"12"}, "f/ratio": {"0.5"}, "f/due": {"2026-12-01"},
		"f/contact/email": {"a@example.com"}, "f/contact/a~1b": {"slash"}, "f/tags": {"x\n\n y \n"}, "f/scores": {"1\n2"},
	}
	v, _, errs := FormValue(fields, form, time.UTC)
	if len(errs) > 0 {
		t.Fatalf("errors %v", errs)
	}
	got, _ := json.Marshal(v)
	want := `{"amount":12,"contact":{"a/b":"slash","email":"a@example.com"},"due":"2026-12-01","ratio":0.5,"scores":[1,2],"tags":["x","y"],"urgent":false,"verdict":"unclear"}`
	if string(got) != want {
		t.Fatalf("assembled %s\nwant      %s", got, want)
	}
	if err := ValidateResumeData(json.RawMessage(formSchema), got); err != nil {
		t.Fatalf("assembled data fails its own schema: %v", err)
	}

	_, shown, errs := FormValue(fields, url.Values{"f/amount": {"twelve"}, "f/scores": {"1\nlots"}}, time.UTC)
	if len(errs) != 2 || errs[0].Field != "/amount" || errs[1].Field != "/scores" {
		t.Fatalf("errors %+v; want amount and scores", errs)
	}
	if errs[0].Message != "Must be a whole number" || errs[1].Message != `"lots": each line must be a whole number` {
		t.Errorf("errors not in plain words: %+v", errs)
	}
	if shown[1].Value != "twelve" {
		t.Errorf("the typed value was not kept: %q", shown[1].Value)
	}

	// A schema error lands on its field; a missing property on the property.
	left := AttachErrors(shown, []domain.FieldError{
		{Field: "/resumeData", Message: "missing property 'verdict'"},
		{Field: "/resumeData/contact", Message: "missing property 'email'"},
		{Field: "/resumeData/nowhere", Message: "odd"},
	})
	if shown[0].Error != "This field is required" || shown[5].Fields[0].Error != "This field is required" {
		t.Errorf("missing properties not on their fields: %q %q", shown[0].Error, shown[5].Fields[0].Error)
	}
	if len(left) != 1 || left[0].Field != "/resumeData/nowhere" {
		t.Errorf("unclaimed errors %+v", left)
	}
}

const choiceSchema = `{
  "type": "object",
  "required": ["verdict", "contact", "when"],
  "properties": {
    "verdict": {"type": "string", "enum": ["ok", "no"], "enumNames": ["Looks right", "Does not add up"]},
    "priority": {"type": "string", "title": "Priority", "oneOf": [{"const": "low", "title": "Low"}, {"const": "high", "title": "High — today"}]},
    "contact": {"type": "string", "format": "email", "title": "Contact email", "description": "Where we write back"},
    "site": {"type": "string", "format": "uri"},
    "due": {"type": "string", "format": "date"},
    "when": {"type": "string", "format": "date-time"},
    "amount": {"type": "integer", "maximum": 100}
  }
}`

func TestFormFieldsLabelsChoicesAndFormats(t *testing.T) {
	t.Parallel()
	fields, ok := FormFields(json.RawMessage(choiceSchema))
	if !ok {
		t.Fatal("a schema of enums with names and oneOf consts gave no form")
	}
	if got := fields[0].Options; !reflect.DeepEqual(got, []views.Option{{Value: "ok", Label: "Looks right"}, {Value: "no", Label: "Does not add up"}}) {
		t.Errorf("enumNames options = %+v", got)
	}
	if got := fields[1].Options; fields[1].Label != "Priority" || !reflect.DeepEqual(got, []views.Option{{Value: "low", Label: "Low"}, {Value: "high", Label: "High — today"}}) {
		t.Errorf("oneOf options = %+v (label %q)", got, fields[1].Label)
	}
	if f := fields[2]; f.Label != "Contact email" || f.Description != "Where we write back" || f.Format != "email" {
		t.Errorf("contact = %+v", f)
	}
	if _, ok := FormFields(json.RawMessage(`{"type":"object","properties":{"x":{"oneOf":[{"const":"a"},{"type":"string"}]}}}`)); ok {
		t.Error("a oneOf that is not a list of consts gave a form")
	}
}

func TestFormValueEnforcesFormats(t *testing.T) {
	t.Parallel()
	fields, _ := FormFields(json.RawMessage(choiceSchema))
	lisbon, err := time.LoadLocation("Europe/Lisbon")
	if err != nil {
		t.Fatal(err)
	}
	_, _, errs := FormValue(fields, url.Values{"f/contact": {"not-an-email"}, "f/site": {"example.com"}, "f/due": {"25/11/2026"}, "f/when": {"tomorrow"}}, lisbon)
	want := map[string]string{
		"/contact": "Enter an email address like name@example.com",
		"/site":    "Enter a full web address like https://example.com/page",
		"/due":     "Enter a date like 2026-11-25",
		"/when":    "Enter a date and time like 2026-11-25 14:30",
	}
	got := map[string]string{}
	for _, e := range errs {
		got[e.Field] = e.Message
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("format errors = %v; want %v", got, want)
	}
	v, _, errs := FormValue(fields, url.Values{"f/verdict": {"ok"}, "f/contact": {"ada@example.com"}, "f/site": {"https://example.com"},
		"f/due": {"2026-11-25"}, "f/when": {"2026-07-01T14:30"}}, lisbon)
	if len(errs) > 0 {
		t.Fatalf("good values refused: %+v", errs)
	}
	// A datetime-local input has no zone: it is read in the viewer's.
	if v["when"] != "2026-07-01T14:30:00+01:00" || v["contact"] != "ada@example.com" {
		t.Fatalf("assembled %v", v)
	}
}

func TestPlainWords(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]string{
		"maximum: got 150, want 100":          "Must be 100 or less",
		"minimum: got 1, want 5":              "Must be 5 or more",
		"exclusiveMaximum: got 9, want 9":     "Must be less than 9",
		"minLength: got 0, want 1":            "This field is required",
		"minLength: got 2, want 8":            "Must be at least 8 characters",
		"maxLength: got 90, want 80":          "Must be 80 characters or fewer",
		"minItems: got 0, want 1":             "Enter at least one, one per line",
		"value must be one of 'a', 'b'":       "Choose one of the options",
		"got string, want integer":            "Must be a whole number",
		"missing property 'x'":                "This field is required",
		"'x' is not valid email: no @":        "Enter an email address like name@example.com",
		"'x' does not match pattern '^[a-z]'": "Is not in the form this field asks for",
		"something new":                       "Something new",
	} {
		if got := plainWords(msg); got != want {
			t.Errorf("plainWords(%q) = %q; want %q", msg, got, want)
		}
	}
}

func TestCommentRule(t *testing.T) {
	t.Parallel()
	for schema, want := range map[string]views.CommentRule{
		``:                  views.CommentOptional,
		`{"type":"object"}`: views.CommentOptional,
		`{"type":"object","required":["comment"],"properties":{"comment":{"type":"string","minLength":1}}}`:  views.CommentRequired,
		`{"type":"object","if":{"properties":{"approved":{"const":false}}},"then":{"required":["comment"]}}`: views.CommentRequiredToReject,
		`{"allOf":[{"if":{"properties":{"approved":{"enum":[false]}}},"then":{"required":["comment"]}}]}`:    views.CommentRequiredToReject,
		`{"if":{"properties":{"approved":{"const":true}}},"then":{"required":["comment"]}}`:                  views.CommentOptional,
	} {
		if got := commentRule(json.RawMessage(schema)); got != want {
			t.Errorf("commentRule(%s) = %d; want %d", schema, got, want)
		}
	}
}

func TestLabelOf(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"receiptIds": "Receipt ids", "claim_id": "Claim id", "claimID": "Claim id", "note": "Note", "a/b": "A/b", "__": "__"} {
		if got := labelOf(name); got != want {
			t.Errorf("labelOf(%q) = %q; want %q", name, got, want)
		}
	}
}
