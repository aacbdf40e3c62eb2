package views

import (
	"strings"
	"testing"
)

// A generated form's inputs match their fields' formats, so that phones
// offer the right keyboard and pickers: a web address gets a url input,
// a date and time a datetime-local one (read in the viewer's zone by the
// server), as emails and dates get theirs.
func TestSchemaFormInputTypesFollowFormats(t *testing.T) {
	var b strings.Builder
	fields := []FormField{
		{Pointer: "/site", Label: "Site", Type: "string", Format: "uri"},
		{Pointer: "/when", Label: "When", Type: "string", Format: "date-time"},
		{Pointer: "/contact", Label: "Contact", Type: "string", Format: "email"},
		{Pointer: "/due", Label: "Due", Type: "string", Format: "date"},
		{Pointer: "/note", Label: "Note", Type: "string"},
	}
	if err := SchemaForm(fields).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<input id="field-site" name="f/site" type="url"`,
		`<input id="field-when" name="f/when" type="datetime-local"`,
		`<input id="field-contact" name="f/contact" type="email"`,
		`<input id="field-due" name="f/due" type="date"`,
		`<input id="field-note" name="f/note" type="text"`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the form lacks %s:\n%s", want, b.String())
		}
	}
}
