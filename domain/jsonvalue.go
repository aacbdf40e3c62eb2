package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// DefaultCheckpointLimit bounds an encoded checkpoint. Checkpoints should
// hold references (ids, hashes), not payloads.
const DefaultCheckpointLimit = 256 << 10

// EncodeJSON turns a step-supplied value into JSON, or says clearly why it
// cannot be stored: functions, channels, NaN and infinities, cycles and text
// with NUL characters (which PostgreSQL's jsonb refuses, so neither database
// accepts them). A nil value encodes as null. limit ≤ 0 means unbounded.
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
	if hasNUL(data) {
		return nil, &ValidationError{Code: code, Message: what + " contains a NUL character (\\u0000), which cannot be stored"}
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

// hasNUL reports whether JSON text contains an escaped NUL (\u0000) outside
// an escaped backslash.
func hasNUL(data []byte) bool {
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(`\u0000`))
		if j < 0 {
			return false
		}
		at := i + j
		n := 0
		for k := at - 1; k >= 0 && data[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return true
		}
		i = at + 1
	}
}
