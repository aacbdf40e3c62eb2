package views

import (
	"context"
	"strings"

	"github.com/a-h/templ"
)

type baseKey struct{}

// WithBase gives the pages rendered with ctx the path they are served
// under when the app is mounted below the root, such as /tollgate: every
// link, form and asset they name starts with it.
func WithBase(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, baseKey{}, base)
}

// BaseOf is the path WithBase put in ctx, or "" at the root.
func BaseOf(ctx context.Context) string {
	b, _ := ctx.Value(baseKey{}).(string)
	return b
}

// at is the link to p, a path of this app (/inbox) or any other URL, as
// the pages rendered with ctx write it: a path of the app gets the base
// path in front; anything else is left as it is. Like the templ.SafeURL it
// stands for, it takes only URLs the server made, never a person's input.
func at(ctx context.Context, p string) templ.SafeURL {
	if strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") {
		return templ.SafeURL(BaseOf(ctx) + p)
	}
	return templ.SafeURL(p)
}
