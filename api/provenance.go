package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"
)

// A design upload may say where it came from, as the client names it: the
// roots the operator gave (?root=, repeatable) and the git commit of their
// work tree (?git_commit=, ?git_dirty=true). The apply history shows them,
// as it shows a local apply's; without them the roots say who uploaded
// and the history says "provenance": "none" (provenanceOf).
// They are the client's word, recorded for people: the audit says who
// applied.

// Provenance bounds.
const (
	maxProvenanceRoots = 32
	maxProvenanceRoot  = 512
)

// uploaderRoot prefixes the root recorded for an upload that named none;
// provenanceOf reads it back as "none".
const uploaderRoot = "(api upload by "

// provenanceParams are POST /designs's query parameters.
var provenanceParams = []param{
	{Name: "root", Many: true, Doc: "a design root as the client named it (the apply history shows them); a URL must carry no credentials"},
	{Name: "git_commit", Doc: "the git commit of the roots' work tree: 40 or 64 lowercase hex digits"},
	{Name: "git_dirty", Enum: []string{"true", "false"}, Doc: "the work tree had uncommitted changes (with git_commit only)"},
}

// provenance is where an upload says it came from.
type provenance struct {
	roots  []string
	commit string
	dirty  bool
	// author and message: the commit's, as git sync gives them (ApplyDir).
	author, message string
}

// uploadProvenance reads an upload's provenance, checked and bounded;
// uploader names the caller when the upload names no root.
func uploadProvenance(c echo.Context, uploader string) (provenance, error) {
	q := c.QueryParams()
	p := provenance{roots: q["root"], commit: q.Get("git_commit")}
	if err := checkRoots(p.roots); err != nil {
		return p, err
	}
	if n := len(p.commit); n != 0 && (n != 40 && n != 64 || strings.Trim(p.commit, "0123456789abcdef") != "") {
		return p, problem(http.StatusBadRequest, fmt.Sprintf("git_commit %.70q: want 40 or 64 lowercase hex digits (git rev-parse HEAD)", p.commit))
	}
	switch d := q.Get("git_dirty"); {
	case d != "" && d != "true" && d != "false":
		return p, problem(http.StatusBadRequest, fmt.Sprintf("git_dirty %.40q: want true or false", d))
	case d != "" && p.commit == "":
		return p, problem(http.StatusBadRequest, "git_dirty without git_commit: give the commit the work tree is at, or neither")
	default:
		p.dirty = d == "true"
	}
	if len(p.roots) == 0 {
		p.roots = []string{uploaderRoot + uploader + ")"}
	}
	return p, nil
}

// checkRoots refuses a root the history cannot show as given: empty,
// oversize, with a control character, or a URL carrying credentials (they
// would be stored and shown to every viewer; the root is not echoed).
func checkRoots(roots []string) error {
	if len(roots) > maxProvenanceRoots {
		return problem(http.StatusBadRequest, fmt.Sprintf("%d root parameters: at most %d", len(roots), maxProvenanceRoots))
	}
	for i, r := range roots {
		if r == "" || len(r) > maxProvenanceRoot || strings.ContainsFunc(r, unicode.IsControl) {
			return problem(http.StatusBadRequest, fmt.Sprintf("root parameter %.40q: want a path of 1 to %d printable bytes", r, maxProvenanceRoot))
		}
		if hasUserinfo(r) {
			return problem(http.StatusBadRequest, fmt.Sprintf("root parameter %d is a URL with credentials: remove the user and password from it", i+1))
		}
	}
	return nil
}

// provenanceOf is what an apply said of its origin: "git" when it gave
// a commit, "none" when it named no root (its one root names the
// uploader), "roots" otherwise.
func provenanceOf(roots []string, commit string) string {
	switch {
	case commit != "":
		return "git"
	case len(roots) > 0 && strings.HasPrefix(roots[0], uploaderRoot):
		return "none"
	default:
		return "roots"
	}
}

// hasUserinfo says whether root is, or holds, a URL with a user or a
// password: "https://u:p@host/x" and also "git:https://u:p@host/x#main"
// (url.Parse reads the latter as the opaque scheme "git").
func hasUserinfo(root string) bool {
	if u, err := url.Parse(root); err == nil && u.User != nil {
		return true
	}
	for rest := root; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			return false
		}
		start := i
		for start > 0 && isSchemeByte(rest[start-1]) {
			start--
		}
		if u, err := url.Parse(rest[start:]); err == nil && u.User != nil {
			return true
		} else if err != nil && strings.Contains(strings.SplitN(rest[i+3:], "/", 2)[0], "@") {
			return true // unparsable, but an authority with a user: refuse rather than store it
		}
		rest = rest[i+3:]
	}
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}
