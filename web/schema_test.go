package web_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// Schema errors name each failing field under what was checked: a run's
// input under /input, resume data under /resumeData.
func TestSchemaErrorsNameTheirRoot(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type": "object", "properties": {"amount": {"type": "number"}}}`)
	data := json.RawMessage(`{"amount": "ten"}`)
	for _, tt := range []struct {
		name     string
		validate func(schema, data json.RawMessage) error
		field    string
	}{
		{"run input", web.ValidateRunInput, "/input/amount"},
		{"resume data", web.ValidateResumeData, "/resumeData/amount"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ve *domain.ValidationError
			if err := tt.validate(schema, data); !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tt.field {
				t.Errorf("errors = %v %+v; want one naming %s", err, ve, tt.field)
			}
		})
	}
}
