package web

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/tollgatehq/tollgate/domain"
)

// Error codes for request bodies the JSON API refuses before reading them as
// JSON. They describe the HTTP transport, not a business rule, so they live
// here rather than in domain.
const (
	// CodeUnsupportedMediaType means the body is not declared as JSON (HTTP 415).
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodePayloadTooLarge means the body exceeds the endpoint's limit (HTTP 413).
	CodePayloadTooLarge = "payload_too_large"
)

// maxJSONDepth bounds the nesting of objects and arrays. Real payloads are
// shallow; deep documents only cost stack in every parser that reads them
// later, including the databases' own.
const maxJSONDepth = 64

// strictText makes the token walk in ValidateJSONValue reject duplicate names
// and invalid UTF-8. Both are the defaults; they are spelled out because the
// approval API depends on them: with duplicates, parsers disagree on which
// value wins.
var strictText = json.JoinOptions(
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// unmarshalOpts matches names exactly (a case-insensitive match is an
// unknown field) and rejects unknown fields. time.Duration is read as
// integer nanoseconds, as encoding/json writes it in responses.
var unmarshalOpts = json.JoinOptions(
	strictText,
	json.MatchCaseInsensitiveNames(false),
	json.RejectUnknownMembers(true),
	jsonv1.FormatDurationAsNano(true),
)

// DecodeJSON reads a JSON request body of at most maxBytes into v, which must
// be a non-nil pointer. An empty body reads as {} and needs no Content-Type.
// The document must pass ValidateJSONValue, and each name must match a field
// of v exactly. On error v is unchanged. Errors about the request are
// *domain.ValidationError with CodeInvalidJSON, CodeUnsupportedMediaType or
// CodePayloadTooLarge; any other error is a programming mistake.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, maxBytes int64) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode json: target must be a non-nil pointer, not %T", v)
	}
	declared, err := checkContentType(r.Header)
	if err != nil {
		return err
	}
	body, err := ReadBody(w, r, maxBytes)
	if err != nil {
		return err
	}
	switch {
	case len(body) == 0:
		body = []byte("{}")
	case !declared:
		return unsupportedMediaType("a request body needs Content-Type: application/json")
	}
	if err := ValidateJSONValue(body); err != nil {
		return err
	}
	return UnmarshalAtomic(rv, body)
}

// checkContentType reports whether the request declares a JSON body. A
// missing header is not an error here: an empty body needs none.
func checkContentType(h http.Header) (declared bool, err error) {
	values := h.Values("Content-Type")
	switch len(values) {
	case 0:
		return false, nil
	case 1:
	default:
		// Proxies disagree on which of several headers counts.
		return false, unsupportedMediaType("the request has more than one Content-Type header")
	}
	mediaType, params, err := mime.ParseMediaType(values[0])
	if err != nil {
		return false, unsupportedMediaType("the Content-Type header is malformed")
	}
	if mediaType != "application/json" &&
		!(strings.HasPrefix(mediaType, "application/") && strings.HasSuffix(mediaType, "+json")) {
		return false, unsupportedMediaType(fmt.Sprintf("Content-Type must be application/json, not %s", mediaType))
	}
	// JSON is UTF-8 (RFC 8259 §8.1); another charset means a client or proxy
	// may have transcoded the text we are about to read as UTF-8.
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return false, unsupportedMediaType(fmt.Sprintf("JSON must be UTF-8, not charset %q", cs))
	}
	return true, nil
}

func unsupportedMediaType(msg string) *domain.ValidationError {
	return &domain.ValidationError{Code: CodeUnsupportedMediaType, Message: msg}
}

// ReadBody reads the whole body, refusing more than maxBytes.
func ReadBody(w http.ResponseWriter, r *http.Request, maxBytes int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err == nil {
		return body, nil
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, &domain.ValidationError{
			Code:    CodePayloadTooLarge,
			Message: fmt.Sprintf("the request body exceeds %d bytes", maxBytes),
		}
	}
	// The client went away or sent a broken chunked body: its fault, not ours.
	return nil, &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: "the request body could not be read"}
}

// UnmarshalAtomic decodes body into a copy of *rv and stores it only on
// success, so a caller that ignores the error cannot act on half a request.
func UnmarshalAtomic(rv reflect.Value, body []byte) error {
	tmp := reflect.New(rv.Elem().Type())
	tmp.Elem().Set(rv.Elem())
	if err := json.Unmarshal(body, tmp.Interface(), unmarshalOpts); err != nil {
		return unmarshalError(err)
	}
	rv.Elem().Set(tmp.Elem())
	return nil
}

// ValidateJSONValue checks that data is exactly one JSON value that every
// store and parser we use reads the same way: valid UTF-8 with no lone
// surrogates, no duplicate object names, no two names of one object equal
// under case folding (see domain.NameFolds), nesting of at most 64 levels, no
// NUL character (PostgreSQL jsonb cannot store one, so SQLite must not
// either), no number beyond the float64 range and nothing after the value
// but whitespace. It returns a *domain.ValidationError with CodeInvalidJSON.
func ValidateJSONValue(data []byte) error {
	d := jsontext.NewDecoder(bytes.NewReader(data), strictText)
	var folds domain.NameFolds
	for {
		prev := d.InputOffset()
		tok, err := d.ReadToken()
		if err != nil {
			return syntaxError(err)
		}
		start := skipFrom(data, prev, " \t\r\n,:")
		if err := checkToken(d, tok, start); err != nil {
			return err
		}
		if earlier, clash := folds.Next(d, tok); clash {
			return invalidJSON(d.StackPointer(), start, domain.CaseClash(earlier, tok.String()))
		}
		if d.StackDepth() == 0 {
			break
		}
	}
	end := d.InputOffset()
	if _, err := d.ReadToken(); err != io.EOF {
		return invalidJSON("", skipFrom(data, end, " \t\r\n"), "unexpected data after the top-level value")
	}
	return nil
}

// checkToken applies the rules jsontext does not: depth, number range and
// NUL. The token starts at offset start.
func checkToken(d *jsontext.Decoder, tok jsontext.Token, start int64) error {
	if d.StackDepth() > maxJSONDepth {
		// No pointer: at this depth it is mostly noise.
		return invalidJSON("", start, fmt.Sprintf("nesting is deeper than %d levels", maxJSONDepth))
	}
	if tok.Kind() == '0' {
		// PostgreSQL keeps 1e400 as numeric; SQLite reads it as infinity.
		if _, err := strconv.ParseFloat(tok.String(), 64); err != nil {
			return invalidJSON(d.StackPointer(), start,
				fmt.Sprintf("number %s is out of range", truncateEcho(tok.String(), maxEcho)))
		}
	}
	if tok.Kind() != '"' || !strings.Contains(tok.String(), "\x00") {
		return nil
	}
	ptr := d.StackPointer()
	if kind, n := d.StackIndex(d.StackDepth()); kind == '{' && n%2 == 1 {
		ptr = ptr.Parent() // the name itself holds the NUL; point at its object
	}
	return invalidJSON(ptr, start, `NUL characters (\u0000) are not allowed in JSON strings`)
}

// skipFrom returns the offset of the first byte at or after from not in cutset.
func skipFrom(data []byte, from int64, cutset string) int64 {
	rest := data[from:]
	return from + int64(len(rest)-len(bytes.TrimLeft(rest, cutset)))
}

// syntaxError turns a jsontext error into a message that names the place.
func syntaxError(err error) error {
	if errors.Is(err, io.EOF) {
		return invalidJSON("", 0, "the document is empty")
	}
	se, ok := errors.AsType[*jsontext.SyntacticError](err)
	if !ok {
		return invalidJSON("", -1, "malformed input")
	}
	reason := se.Err.Error()
	switch {
	case errors.Is(se.Err, io.ErrUnexpectedEOF):
		reason = "unexpected end of input"
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		reason = fmt.Sprintf("duplicate name %q", truncateEcho(se.JSONPointer.LastToken(), maxEcho))
	}
	return invalidJSON(se.JSONPointer, se.ByteOffset, reason)
}

// unmarshalError explains why a well-formed document does not fit the target.
func unmarshalError(err error) error {
	if ve, ok := errors.AsType[*domain.ValidationError](err); ok {
		return ve // from a field's own UnmarshalJSON
	}
	if _, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		return syntaxError(err)
	}
	se, ok := errors.AsType[*json.SemanticError](err)
	if !ok {
		return fmt.Errorf("decode json: %w", err)
	}
	want, got := describeGoType(se.GoType), describeKind(se.JSONKind)
	var reason string
	switch {
	case errors.Is(se.Err, json.ErrUnknownName):
		reason = fmt.Sprintf("unknown field %q (names are case-sensitive)", truncateEcho(se.JSONPointer.LastToken(), maxEcho))
	case errors.Is(se.Err, strconv.ErrRange):
		reason = fmt.Sprintf("number %s is out of range for %s", truncateEcho(string(se.JSONValue), maxEcho), want)
	case se.Err == nil, errors.Is(se.Err, strconv.ErrSyntax):
		reason = fmt.Sprintf("expected %s, got %s", want, got)
	default:
		reason = fmt.Sprintf("invalid value: %v", se.Err)
	}
	return invalidJSON(se.JSONPointer, se.ByteOffset, reason)
}

// maxEcho bounds how much of the client's input an error message repeats.
const maxEcho = 100

// invalidJSON builds the error for every rule above. offset < 0 means unknown.
func invalidJSON(ptr jsontext.Pointer, offset int64, reason string) *domain.ValidationError {
	field := truncateEcho(string(ptr), 2*maxEcho)
	var where []string
	if field != "" {
		where = append(where, field)
	}
	if offset >= 0 {
		where = append(where, fmt.Sprintf("byte %d", offset))
	}
	msg := "invalid JSON: " + reason
	if len(where) > 0 {
		msg = fmt.Sprintf("invalid JSON at %s: %s", strings.Join(where, ", "), reason)
	}
	e := &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: msg}
	if field != "" {
		e.Fields = []domain.FieldError{{Field: field, Message: reason}}
	}
	return e
}

var (
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// describeGoType names the JSON a Go type accepts, without Go type names.
func describeGoType(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return "a value"
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return "a string" // time.Time, netip.Addr and the like
	case reflect.PointerTo(t).Implements(jsonUnmarshalerType):
		return "a value"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value"
}

func describeKind(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "a value"
}

// truncateEcho shortens s to at most n bytes, cutting at a rune boundary.
func truncateEcho(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
