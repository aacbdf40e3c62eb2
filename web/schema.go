package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tollgatehq/tollgate/domain"
)

// ValidateResumeData checks resume data against a suspension's JSON Schema
// and reports each failing field. It is wired into the engine, so every
// path that resumes — API or UI — applies it.
func ValidateResumeData(schema, data json.RawMessage) error {
	return validateJSON(schema, data, "resume data", "/resumeData", "the suspension's schema")
}

// ValidateRunInput checks a run input against its workflow's input schema.
func ValidateRunInput(schema, data json.RawMessage) error {
	return validateJSON(schema, data, "run input", "/input", "the workflow's input schema")
}

// CheckSchema reports why a JSON Schema cannot be used, or nil.
func CheckSchema(schema json.RawMessage) error {
	_, err := compileSchema(schema)
	return err
}

func compileSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("schema.json")
}

func validateJSON(schema, data json.RawMessage, what, root, against string) error {
	sch, err := compileSchema(schema)
	if err != nil {
		return fmt.Errorf("%s: %w", against, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: what + " is not valid JSON"}
	}
	err = sch.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	fields := leafErrors(ve.DetailedOutput(), root, nil)
	if len(fields) == 0 {
		fields = []domain.FieldError{{Field: root, Message: ve.Error()}}
	}
	return &domain.ValidationError{Code: domain.CodeValidation, Message: what + " does not match " + against, Fields: fields}
}

// leafErrors flattens the detailed output to the innermost messages, which
// name the failing field under root.
func leafErrors(u *jsonschema.OutputUnit, root string, acc []domain.FieldError) []domain.FieldError {
	if len(u.Errors) == 0 && u.Error != nil {
		return append(acc, domain.FieldError{Field: root + u.InstanceLocation, Message: strings.TrimSpace(u.Error.String())})
	}
	for i := range u.Errors {
		acc = leafErrors(&u.Errors[i], root, acc)
	}
	return acc
}
