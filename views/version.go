package views

import "context"

type versionKey struct{}

// WithVersion gives the pages rendered with ctx the server's version, shown
// in their footer to people who are signed in.
func WithVersion(ctx context.Context, version string) context.Context {
	return context.WithValue(ctx, versionKey{}, version)
}

// VersionOf is the server's version that WithVersion put in ctx, or "".
func VersionOf(ctx context.Context) string {
	v, _ := ctx.Value(versionKey{}).(string)
	return v
}
