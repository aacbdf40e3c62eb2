package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParsePointer checks a JSON Pointer (RFC 6901) and returns its reference
// tokens, unescaped.
func ParsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON Pointer: it starts with /, like /input/amount", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, tok := range tokens {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return nil, fmt.Errorf("%q is not a JSON Pointer: ~ is written ~0 and / is written ~1", p)
			}
		}
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
	}
	return tokens, nil
}

// PointerString resolves a JSON pointer (RFC 6901) in doc to a non-empty
// string.
func PointerString(doc json.RawMessage, pointer string) (string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return "", fmt.Errorf("the run input is not JSON: %w", err)
	}
	for _, tok := range strings.Split(pointer, "/")[1:] {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return "", fmt.Errorf("the run input has no %q", tok)
			}
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(x) {
				return "", fmt.Errorf("the run input has no element %q", tok)
			}
			v = x[n]
		default:
			return "", fmt.Errorf("the run input has no %q", tok)
		}
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", errors.New("it does not lead to a non-empty string in the run input")
	}
	return s, nil
}
