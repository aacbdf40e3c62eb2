package mail

import "github.com/tollgatehq/tollgate/domain"

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
