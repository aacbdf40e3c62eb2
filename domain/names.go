package domain

import "fmt"

// MaxNameLen bounds workflow and step names.
const MaxNameLen = 100

// ValidateName checks a workflow or step name: 1–100 characters of ASCII
// letters, digits, '-', '_' and '.'. Names reach URLs, logs and job keys, so
// nothing else is allowed.
func ValidateName(what, name string) error {
	if name == "" {
		return Invalid("%s name is empty", what)
	}
	if len(name) > MaxNameLen {
		return Invalid("%s name is %d characters long; at most %d are allowed", what, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return Invalid("%s name %q has %s at position %d; only letters, digits, '-', '_' and '.' are allowed", what, name, describeByte(name[i]), i+1)
		}
	}
	return nil
}

func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.'
}

func describeByte(b byte) string {
	if b < 0x20 || b >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", b)
	}
	return fmt.Sprintf("%q", b)
}
