// Package views holds Tollgate's pages as templ components. Components get
// everything they show from their arguments; they never read data.
package views

//go:generate go tool templ generate
