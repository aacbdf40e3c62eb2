package domain

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxFilenameLen bounds a document's file name, in bytes.
const MaxFilenameLen = 255

// extensions are the file name extensions of the types a sniff finds
// (http.DetectContentType), the usual one first. A name that ends in one
// of its type's extensions keeps it; any other ends in the first.
var extensions = map[string][]string{
	"application/pdf":               {".pdf"},
	"image/png":                     {".png"},
	"image/jpeg":                    {".jpg", ".jpeg", ".jpe"},
	"image/gif":                     {".gif"},
	"image/webp":                    {".webp"},
	"image/bmp":                     {".bmp"},
	"image/x-icon":                  {".ico"},
	"text/plain":                    {".txt", ".csv", ".tsv", ".md", ".json", ".log"},
	"text/html":                     {".html", ".htm"},
	"text/xml":                      {".xml"},
	"application/zip":               {".zip", ".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp", ".epub"},
	"application/x-gzip":            {".gz", ".tgz"},
	"application/x-rar-compressed":  {".rar"},
	"application/postscript":        {".ps", ".eps"},
	"application/ogg":               {".ogg"},
	"application/wasm":              {".wasm"},
	"audio/mpeg":                    {".mp3"},
	"audio/wave":                    {".wav"},
	"audio/aiff":                    {".aiff", ".aif"},
	"audio/basic":                   {".au", ".snd"},
	"audio/midi":                    {".mid", ".midi"},
	"video/mp4":                     {".mp4"},
	"video/webm":                    {".webm"},
	"video/avi":                     {".avi"},
	"font/ttf":                      {".ttf"},
	"font/otf":                      {".otf"},
	"font/woff":                     {".woff"},
	"font/woff2":                    {".woff2"},
	"application/vnd.ms-fontobject": {".eot"},
}

// ExtensionFor is the usual file name extension of a content type, with
// its dot; ".bin" for a type without one.
func ExtensionFor(contentType string) string {
	if exts, ok := extensions[contentType]; ok {
		return exts[0]
	}
	return ".bin"
}

// CleanFilename is the name a document of the given (sniffed) content type
// is stored and offered under: the last element of the uploaded name
// (after any '/' or '\'), without control or bidirectional formatting
// characters (which can make "gnp.exe" read as "exe.png"), without
// leading dots, ending in an extension of its content type (so that
// "report.html" holding PNG bytes becomes "report.png") and at most
// MaxFilenameLen bytes; "document" plus the extension when nothing is left.
// With no content type, the name keeps the extension it has.
func CleanFilename(name, contentType string) string {
	name = strings.ToValidUTF8(name, "_")
	name = name[strings.LastIndexAny(name, `/\`)+1:]
	name = strings.Map(func(r rune) rune {
		if unwantedInName(r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ". ")
	base, ext := splitExtension(name)
	if contentType != "" && !hasExtension(contentType, ext) {
		base, ext = name, ExtensionFor(contentType)
		if known := knownExtension(name); known != "" {
			base = strings.TrimSuffix(name, known)
		}
	}
	base = strings.TrimRight(base, ". ")
	if base == "" {
		base = "document"
	}
	for len(base)+len(ext) > MaxFilenameLen {
		_, size := utf8.DecodeLastRuneInString(base)
		base = base[:len(base)-size]
	}
	return base + ext
}

// unwantedInName is true of control characters, line and paragraph
// separators and the bidirectional formatting characters.
func unwantedInName(r rune) bool {
	switch {
	case unicode.IsControl(r), r == '\u2028', r == '\u2029':
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e', r == '\u200f', r == '\u061c':
		return true
	}
	return false
}

// splitExtension splits "a.b.pdf" into "a.b" and ".pdf"; a name without a
// dot has no extension.
func splitExtension(name string) (base, ext string) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return name, ""
	}
	return name[:i], name[i:]
}

func hasExtension(contentType, ext string) bool {
	for _, e := range extensions[contentType] {
		if strings.EqualFold(e, ext) {
			return true
		}
	}
	return false
}

// knownExtension is the extension name ends in when it looks like one —
// one to five ASCII letters and digits, at least one a letter — which a
// new extension replaces, or "", and one is added: "v1.2" stays "v1.2.pdf".
func knownExtension(name string) string {
	_, ext := splitExtension(name)
	if len(ext) < 2 || len(ext) > 6 {
		return ""
	}
	letter := false
	for _, c := range ext[1:] {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9':
		default:
			return ""
		}
	}
	if !letter {
		return ""
	}
	return ext
}
