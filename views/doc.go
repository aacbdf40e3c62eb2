// Package views holds Tollgate's pages as templ components. Components get
// everything they show from their arguments; they never read data.
//
// The *_templ.go files are generated from the repository root with
// `go tool templ generate` (make generate), which names the sources
// views/*.templ in the generated code.
package views
