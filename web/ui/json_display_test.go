package ui

import "testing"

func TestIndentJSONShowsCharactersNotEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"\u003cb\u003e \u0026"}`: "{\n  \"a\": \"<b> &\"\n}",
		`{"a":"\\u003c"}`:              "{\n  \"a\": \"\\\\u003c\"\n}", // the text \u003c, escaped backslash kept
		`["\n\"\u00e9"]`:               "[\n  \"\\n\\\"\\u00e9\"\n]",
		`not json`:                     `not json`,
	} {
		if got := indentJSON([]byte(in)); got != want {
			t.Errorf("indentJSON(%s) = %q; want %q", in, got, want)
		}
	}
}
