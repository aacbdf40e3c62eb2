package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// DefaultCheckpointLimit bounds an encoded checkpoint. Checkpoints should
// hold references (ids, hashes), not payloads.
const DefaultCheckpointLimit = 256 << 10

// EncodeJSON turns a step-supplied value into JSON, or says clearly why it
// cannot be stored: functions, channels, NaN and infinities, cycles, and
// text that PostgreSQL's jsonb refuses (see CheckJSON), so that neither
// database accepts it. A nil value encodes as null. limit ≤ 0 means unbounded.
func EncodeJSON(what string, v any, limit int, code string) (json.RawMessage, error) {
	var data []byte
	switch x := v.(type) {
	case nil:
		data = []byte("null")
	case json.RawMessage:
		if !json.Valid(x) {
			return nil, &ValidationError{Code: code, Message: what + " is not valid JSON"}
		}
		data = x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, &ValidationError{Code: code, Message: what + " must be JSON-serializable: " + jsonProblem(err)}
		}
		data = b
	}
	if p := textProblem(data); p != "" {
		return nil, &ValidationError{Code: code, Message: what + " " + p}
	}
	if limit > 0 && len(data) > limit {
		return nil, &ValidationError{Code: CodeCheckpointTooLarge, Message: fmt.Sprintf("%s is %d bytes; the limit is %d", what, len(data), limit)}
	}
	return data, nil
}

func jsonProblem(err error) string {
	var ute *json.UnsupportedTypeError
	if errors.As(err, &ute) {
		return "values of type " + ute.Type.String() + " have no JSON form"
	}
	var uve *json.UnsupportedValueError
	if errors.As(err, &uve) {
		return "value " + uve.Str + " has no JSON form"
	}
	return err.Error()
}

// CheckJSON checks JSON text that arrives already encoded (a run's input,
// resume data, a signal's payload): it must be valid JSON that both
// databases store unchanged and every reader reads alike. PostgreSQL's jsonb
// refuses a NUL character (\u0000) and an unpaired UTF-16 surrogate escape,
// and rewrites invalid UTF-8, where SQLite would keep all three; jsonb also
// keeps only the last of duplicate names and reorders names, so two names
// equal but for case would reach a case-insensitive decoder in a different
// order on each. Rejecting all of them here gives one answer on both. The
// error is a *ValidationError with code invalid_json.
func CheckJSON(data []byte) error {
	if !json.Valid(data) {
		return &ValidationError{Code: CodeInvalidJSON, Message: "body is not valid JSON"}
	}
	if p := textProblem(data); p != "" {
		return &ValidationError{Code: CodeInvalidJSON, Message: "JSON " + p}
	}
	return checkNames(data)
}

// checkNames refuses duplicate names and names equal under case folding,
// at any depth, naming the place with a JSON Pointer.
func checkNames(data []byte) error {
	d := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(false))
	var folds NameFolds
	for {
		tok, err := d.ReadToken()
		if err == io.EOF {
			return nil
		}
		if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok && errors.Is(se.Err, jsontext.ErrDuplicateName) {
			return nameError(se.JSONPointer, fmt.Sprintf("duplicate name %q", clip(se.JSONPointer.LastToken())))
		}
		if err != nil {
			return &ValidationError{Code: CodeInvalidJSON, Message: "body is not valid JSON"}
		}
		if earlier, clash := folds.Next(d, tok); clash {
			return nameError(d.StackPointer(), CaseClash(earlier, tok.String()))
		}
	}
}

func nameError(at jsontext.Pointer, reason string) *ValidationError {
	return &ValidationError{Code: CodeInvalidJSON, Message: fmt.Sprintf("JSON at %s: %s", clip(string(at)), reason),
		Fields: []FieldError{{Field: string(at), Message: reason}}}
}

// IsNull reports whether raw holds no value: it is empty, or JSON null.
func IsNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// textProblem explains why valid JSON text cannot be stored as it is, or
// returns "". In valid JSON every backslash starts an escape inside a string,
// so one pass that skips over escapes sees each of them exactly once.
func textProblem(data []byte) string {
	if !utf8.Valid(data) {
		return "contains bytes that are not valid UTF-8"
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if i+1 < len(data) && data[i+1] != 'u' {
			i++ // a two-character escape such as \\ or \"
			continue
		}
		r := hex4(data, i+2)
		switch {
		case r == 0:
			return "contains a NUL character (\\u0000), which cannot be stored"
		case r >= 0xD800 && r <= 0xDBFF:
			if lo := hex4(data, i+8); i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11
				continue
			}
			return "contains an unpaired UTF-16 surrogate (\\u" + string(data[i+2:i+6]) + "), which cannot be stored"
		case r >= 0xDC00 && r <= 0xDFFF:
			return "contains an unpaired UTF-16 surrogate (\\u" + string(data[i+2:i+6]) + "), which cannot be stored"
		}
		i += 5
	}
	return ""
}

// hex4 decodes the four hex digits at data[at:], or returns -1.
func hex4(data []byte, at int) int {
	if at < 0 || at+4 > len(data) {
		return -1
	}
	n, err := strconv.ParseUint(string(data[at:at+4]), 16, 32)
	if err != nil {
		return -1
	}
	return int(n)
}

// SameJSON compares two JSON documents by value, so that the formatting a
// database normalises (jsonb) does not make equal documents differ.
func SameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// OrNull is b, or JSON null when b is empty: absent data stored or shown
// as null, keeping the JSON type.
func OrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
