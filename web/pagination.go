package web

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/tollgatehq/tollgate/domain"
)

// Every list the API answers is a page: {"items": [...], "nextCursor"},
// read with the same two query parameters, so that a client pages through
// runs, suspensions and deliveries alike.

type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// PageQuery reads a list's paging parameters: the cursor a previous page
// handed out, and the page size, limit (1–500; 0 when absent, which leaves
// it to the store). A bad limit is added to errs.
func PageQuery(q url.Values, errs []domain.FieldError) (cursor string, limit int, _ []domain.FieldError) {
	cursor = q.Get("cursor")
	v := q.Get("limit")
	if v == "" {
		return cursor, 0, errs
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 500 {
		return cursor, 0, append(errs, domain.QueryError("limit", "must be an integer from 1 to 500"))
	}
	return cursor, n, errs
}

// InvalidQuery is the answer to a list's query parameters that errs
// refuses; nil when there are none.
func InvalidQuery(errs []domain.FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	return &domain.ValidationError{Code: domain.CodeValidation, Message: "invalid query parameters", Fields: errs}
}

// WritePage answers with items, each as view shows it, and the cursor of
// the next page ("" after the last).
func WritePage[T, V any](w http.ResponseWriter, items []T, view func(T) V, next string) {
	out := make([]V, len(items))
	for i, it := range items {
		out[i] = view(it)
	}
	WriteJSON(w, http.StatusOK, Page[V]{Items: out, NextCursor: next})
}
