// Package static holds the stylesheets and scripts the pages load,
// embedded in the binary. Vendored files carry their version in their name.
package static

import "embed"

// FS is served under /static/.
//
//go:embed app.css app.js vendor
var FS embed.FS
