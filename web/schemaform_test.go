package web

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
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
	fields, ok := formFields(json.RawMessage(formSchema))
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
	if f := fields[0]; f.Label != "Verdict" || !f.Required || len(f.Enum) != 3 || f.Description == "" {
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
		if _, ok := formFields(json.RawMessage(s)); ok {
			t.Errorf("schema %s gave a form; want the JSON editor", s)
		}
	}
}

func TestFormValueAssemblesTypedData(t *testing.T) {
	fields, _ := formFields(json.RawMessage(formSchema))
	form := url.Values{
		"f/verdict": {"unclear"}, "f/amount": {"12"}, "f/ratio": {"0.5"}, "f/due": {"2026-12-01"},
		"f/contact/email": {"a@example.com"}, "f/contact/a~1b": {"slash"}, "f/tags": {"x\n\n y \n"}, "f/scores": {"1\n2"},
	}
	v, _, errs := formValue(fields, form)
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

	_, shown, errs := formValue(fields, url.Values{"f/amount": {"twelve"}, "f/scores": {"1\nlots"}})
	if len(errs) != 2 || errs[0].Field != "/amount" || errs[1].Field != "/scores" {
		t.Fatalf("errors %+v; want amount and scores", errs)
	}
	if shown[1].Value != "twelve" {
		t.Errorf("the typed value was not kept: %q", shown[1].Value)
	}

	// A schema error lands on its field; a missing property on the property.
	left := attachErrors(shown, []domain.FieldError{
		{Field: "/resumeData", Message: "missing property 'verdict'"},
		{Field: "/resumeData/contact", Message: "missing property 'email'"},
		{Field: "/resumeData/nowhere", Message: "odd"},
	})
	if shown[0].Error != "required" || shown[5].Fields[0].Error != "required" {
		t.Errorf("missing properties not on their fields: %q %q", shown[0].Error, shown[5].Fields[0].Error)
	}
	if len(left) != 1 || left[0].Field != "/resumeData/nowhere" {
		t.Errorf("unclaimed errors %+v", left)
	}
}
