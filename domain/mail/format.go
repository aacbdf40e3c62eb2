package mail

import (
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

// FormatField writes a presentation field's value as a mail shows it: as
// the pages do for a reader in the United States and UTC, since a mail
// cannot know its reader's locale. An empty value reads "—".
func FormatField(f domain.Field) string {
	v := domain.Formatter{}.Field(f)
	if v.Empty {
		return "—"
	}
	return v.Text
}

// SubjectPrefix begins the subject of every mail that a server of
// organisation sends (requests, digests, decision links, password
// resets), "[Acme Ltd] ", so that its mail is told apart from other
// servers'; "" without a name.
func SubjectPrefix(organisation string) string {
	if o := strings.TrimSpace(organisation); o != "" {
		return "[" + o + "] "
	}
	return ""
}
