package api

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"
)

// A design upload may say where it came from, as the client names it: the
// roots the operator gave (?root=, repeatable) and the git commit of their
// work tree (?git_commit=, ?git_dirty=true). The apply history shows them,
// as it shows a local apply's; without them the roots say who uploaded.
// They are the client's word, recorded for people: the audit says who
// applied.

// Provenance bounds.
const (
	maxProvenanceRoots = 32
	maxProvenanceRoot  = 512
	maxGitCommit       = 64
)

// provenanceParams are POST /designs's query parameters.
var provenanceParams = []param{
	{Name: "root", Many: true, Doc: "a design root as the client named it (the apply history shows them)"},
	{Name: "git_commit", Doc: "the git commit of the roots' work tree (hex)"},
	{Name: "git_dirty", Enum: []string{"true", "false"}, Doc: "the work tree had uncommitted changes"},
}

// provenance is where an upload says it came from.
type provenance struct {
	roots  []string
	commit string
	dirty  bool
}

// uploadProvenance reads an upload's provenance, checked and bounded;
// uploader names the caller when the upload names no root.
func uploadProvenance(c echo.Context, uploader string) (provenance, error) {
	q := c.QueryParams()
	p := provenance{roots: q["root"], commit: q.Get("git_commit"), dirty: q.Get("git_dirty") == "true"}
	if len(p.roots) > maxProvenanceRoots {
		return p, problem(http.StatusBadRequest, fmt.Sprintf("%d root parameters: at most %d", len(p.roots), maxProvenanceRoots))
	}
	for _, r := range p.roots {
		if r == "" || len(r) > maxProvenanceRoot || strings.ContainsFunc(r, unicode.IsControl) {
			return p, problem(http.StatusBadRequest, fmt.Sprintf("root parameter %.40q: want a path of 1 to %d printable bytes", r, maxProvenanceRoot))
		}
	}
	if len(p.commit) > maxGitCommit || strings.Trim(p.commit, "0123456789abcdef") != "" {
		return p, problem(http.StatusBadRequest, fmt.Sprintf("git_commit %.40q: want at most %d lowercase hex digits", p.commit, maxGitCommit))
	}
	if len(p.roots) == 0 {
		p.roots = []string{"(api upload by " + uploader + ")"}
	}
	return p, nil
}
