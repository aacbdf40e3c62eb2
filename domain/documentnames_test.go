package domain_test

import (
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

func TestCleanFilename(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 200) + ".pdf"
	tests := []struct {
		name, in, contentType, want string
	}{
		{"kept", "claim.pdf", "application/pdf", "claim.pdf"},
		{"extension of another type replaced", "report.html", "image/png", "report.png"},
		{"extension added", "README", "text/plain", "README.txt"},
		{"version number kept", "statement v1.2", "application/pdf", "statement v1.2.pdf"},
		{"alias kept", "scan.JPEG", "image/jpeg", "scan.JPEG"},
		{"archive kept", "backup.tar.gz", "application/x-gzip", "backup.tar.gz"},
		{"unknown type", "data.png", "application/octet-stream", "data.bin"},
		{"right-to-left override", "invoice\u202egnp.exe", "image/png", "invoicegnp.png"},
		{"every bidi control", "a\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061cb.pdf", "application/pdf", "ab.pdf"},
		{"control characters", "a\x00b\r\nc\x7f\u0085.pdf", "application/pdf", "abc.pdf"},
		{"unix path", "../../etc/passwd", "text/plain", "passwd.txt"},
		{"windows path", `C:\Users\me\claim.pdf`, "application/pdf", "claim.pdf"},
		{"mixed path", `..\evil/claim "Q3".pdf`, "application/pdf", `claim "Q3".pdf`},
		{"dot dot", "..", "application/pdf", "document.pdf"},
		{"leading dots", "...htaccess", "text/plain", "htaccess.txt"},
		{"hidden file", ".env", "text/plain", "env.txt"},
		{"trailing dots and spaces", "claim. . ", "application/pdf", "claim.pdf"},
		{"empty", "", "image/png", "document.png"},
		{"only controls", "\u202e\u200f", "application/pdf", "document.pdf"},
		{"invalid UTF-8", "a\xffb.pdf", "application/pdf", "a_b.pdf"},
		{"capped on a rune boundary", long, "application/pdf", strings.Repeat("é", 125) + ".pdf"},
		{"no type keeps the extension", "claim.pdf", "", "claim.pdf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := domain.CleanFilename(tt.in, tt.contentType)
			if got != tt.want {
				t.Errorf("CleanFilename(%q, %q) = %q; want %q", tt.in, tt.contentType, got, tt.want)
			}
			if len(got) > domain.MaxFilenameLen {
				t.Errorf("%q is %d bytes long", got, len(got))
			}
		})
	}
}
