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
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("suspension resume schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("resume.json", doc); err != nil {
		return fmt.Errorf("suspension resume schema: %w", err)
	}
	sch, err := c.Compile("resume.json")
	if err != nil {
		return fmt.Errorf("suspension resume schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: "resume data is not valid JSON"}
	}
	err = sch.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	fields := leafErrors(ve.DetailedOutput(), nil)
	if len(fields) == 0 {
		fields = []domain.FieldError{{Field: "/resumeData", Message: ve.Error()}}
	}
	return &domain.ValidationError{Code: domain.CodeValidation, Message: "resume data does not match the suspension's schema", Fields: fields}
}

// leafErrors flattens the detailed output to the innermost messages, which
// name the failing field.
func leafErrors(u *jsonschema.OutputUnit, acc []domain.FieldError) []domain.FieldError {
	if len(u.Errors) == 0 && u.Error != nil {
		return append(acc, domain.FieldError{Field: "/resumeData" + u.InstanceLocation, Message: strings.TrimSpace(u.Error.String())})
	}
	for i := range u.Errors {
		acc = leafErrors(&u.Errors[i], acc)
	}
	return acc
}
