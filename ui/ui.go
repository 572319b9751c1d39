// Package ui is Slipway's web dashboard: static files embedded in the
// binary (no build step, nothing fetched at run time), served by the
// control API at /ui/. The page signs in with an API token kept in the
// tab's sessionStorage and sent as a bearer header on each API call (never
// in a URL); what it shows and offers follows the token's role, and the
// API decides anyway.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// csp allows the page's own scripts, styles and API calls, nothing else:
// no inline script, no other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the dashboard's files (mount it with the /ui prefix
// stripped).
func Handler() http.Handler {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree always has it
	}
	fsh := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		fsh.ServeHTTP(w, r)
	})
}
