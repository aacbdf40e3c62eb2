package domain

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// DocumentIDsMember is the member of resume data that names documents:
// data that is an object with it may name only documents uploaded to the
// suspension it resumes.
const DocumentIDsMember = "documentIds"

// NamedDocuments returns the ids resume data names in its top-level
// documentIds member, and whether it has that member. Elements that are
// not strings are left out of ids (CheckNamedDocuments refuses them).
func NamedDocuments(data json.RawMessage) (ids []string, named bool) {
	items, named, ok := documentItems(data)
	if !named || !ok {
		return nil, named
	}
	for _, item := range items {
		var id string
		if json.Unmarshal(item, &id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, true
}

// CheckNamedDocuments refuses resume data whose documentIds member is not
// a list of ids of documents that uploaded says were uploaded to the
// suspension being resumed, with CodeUnknownDocument and the JSON pointer
// of each element at fault. Data without that member passes.
func CheckNamedDocuments(data json.RawMessage, uploaded func(id string) bool) error {
	items, named, ok := documentItems(data)
	if !named {
		return nil
	}
	const field = "/resumeData/" + DocumentIDsMember
	if !ok {
		return unknownDocuments(FieldError{Field: field, Message: "must be a list of ids of documents uploaded to this request"})
	}
	var bad []FieldError
	for i, item := range items {
		var id string
		if json.Unmarshal(item, &id) != nil || !uploaded(id) {
			bad = append(bad, FieldError{Field: field + "/" + strconv.Itoa(i), Message: "no document with this id was uploaded to this request"})
		}
	}
	if len(bad) > 0 {
		return unknownDocuments(bad...)
	}
	return nil
}

func unknownDocuments(fields ...FieldError) error {
	return &ValidationError{Code: CodeUnknownDocument, Message: "The resume data names documents that were not uploaded to this request.", Fields: fields}
}

// documentItems reads data's documentIds member: named says data is an
// object that has it, ok that it is a list.
func documentItems(data json.RawMessage) (items []json.RawMessage, named, ok bool) {
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, false, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return nil, false, false
	}
	member, named := obj[DocumentIDsMember]
	if !named {
		return nil, false, false
	}
	if json.Unmarshal(member, &items) != nil || items == nil {
		return nil, true, false
	}
	return items, true, true
}
