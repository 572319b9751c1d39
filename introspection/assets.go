package introspection

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// TemplateData is what a boot action template is rendered with.
type TemplateData struct {
	Node   TemplateNode
	Action TemplateAction
	Site   TemplateSite
}

// TemplateNode is the node a template is rendered for.
type TemplateNode struct {
	Name     string
	Hostname string
	Domain   string
	FQDN     string
	Rack     string
	Labels   map[string]string
	Tags     []string
	// Networks holds every network the node's interfaces carry, by name.
	Networks map[string]TemplateNetwork
}

// TemplateNetwork is a network of the node. Address is an IP, "dhcp", or
// "" when the network is carried but not addressed.
type TemplateNetwork struct {
	Address string
	CIDR    string
	Prefix  int
	Gateway string
	VLAN    int
	MTU     int
}

// TemplateAction is the boot action being rendered: ReportURL is where
// the node reports its result (with its token).
type TemplateAction struct {
	ID        string
	ReportURL string
}

// TemplateSite holds site-wide settings.
type TemplateSite struct {
	Domain string
}

// renderedAction is one boot action's assets, rendered for a node.
type renderedAction struct {
	Name      string
	Signaling bool
	Files     []renderedFile // file and unit assets
	Units     []string       // unit file names
	Packages  []string
}

type renderedFile struct {
	Path string // absolute
	Mode int64
	Data []byte
}

// renderError names the action and asset that did not render.
type renderError struct {
	action string
	index  int
	path   string
	err    error
}

func (e *renderError) Error() string {
	return fmt.Sprintf("boot action %s, assets[%d] (%s): %v", e.action, e.index, e.path, e.err)
}

// pkgRE is what a package name may look like: Debian names, optionally
// with =version or :arch.
var pkgRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9+.:=~_-]*$`)

// templateData returns the data a node's templates are rendered with.
func (s *Server) templateData(self Self, base, action string) TemplateData {
	td := TemplateData{
		Node: TemplateNode{Name: self.Name, Hostname: self.Hostname, Domain: self.Domain, FQDN: self.FQDN,
			Rack: self.Rack, Labels: self.Labels, Tags: self.Tags, Networks: map[string]TemplateNetwork{}},
		Action: TemplateAction{ID: action, ReportURL: base + "/v1/self/actions/" + action},
		Site:   TemplateSite{Domain: self.Domain},
	}
	for _, in := range self.Interfaces {
		for _, nw := range in.Networks {
			td.Node.Networks[nw.Name] = TemplateNetwork{Address: nw.Address, CIDR: nw.CIDR, Prefix: nw.Prefix,
				Gateway: nw.Gateway, VLAN: nw.VLAN, MTU: nw.MTU}
		}
	}
	return td
}

// render renders the assets of every boot action that targets the node,
// in the order of the actions' names, then of their assets.
func (s *Server) render(ctx context.Context, d *design.Design, n *design.Node, deployment string) ([]renderedAction, error) {
	self := selfOf(d, n, deployment)
	base, err := s.urlOf(d)
	if err != nil {
		return nil, err
	}
	revealed := map[string]string{} // secret value → its name, to keep values out of errors
	funcs := design.TemplateFuncs(nil)
	if s.cfg.Secret != nil {
		funcs = design.TemplateFuncs(func(name string) (string, error) {
			v, err := s.cfg.Secret(ctx, name)
			if err == nil && v != "" {
				revealed[v] = name
			}
			return v, err
		})
	}
	owner := map[string]string{} // path → action, to refuse two actions writing one file
	var out []renderedAction
	for _, name := range d.BootActionsFor(n) {
		ba := d.BootActions[name]
		ra := renderedAction{Name: name, Signaling: ba.Spec.Signaling, Units: []string{}, Packages: []string{}, Files: []renderedFile{}}
		td := s.templateData(self, base, name)
		for i, as := range ba.Spec.Assets {
			if err := addAsset(&ra, i, as, td, funcs, owner); err != nil {
				return nil, &renderError{action: name, index: i, path: as.Path, err: redact(err, revealed)}
			}
		}
		out = append(out, ra)
	}
	return out, nil
}

// addAsset renders the asset at index i of action ra and adds it: its
// packages, or its file (a unit's name too). owner says which action
// already delivers each path.
func addAsset(ra *renderedAction, i int, as design.Asset, td any, funcs template.FuncMap, owner map[string]string) error {
	body, err := assetBody(ra.Name, i, as, td, funcs)
	if err != nil {
		return err
	}
	switch as.Type {
	case "pkgList":
		pkgs, err := parsePackages(body)
		ra.Packages = append(ra.Packages, pkgs...)
		return err
	case "file", "unit":
	default:
		return fmt.Errorf("unknown asset type %q", as.Type)
	}
	if err := checkAssetPath(as.Path, as.Type == "unit"); err != nil {
		return err
	}
	if prev, ok := owner[as.Path]; ok {
		return fmt.Errorf("boot action %s delivers %s too: give each file one owner", prev, as.Path)
	}
	owner[as.Path] = ra.Name
	mode, err := assetMode(as.Permissions)
	if err != nil {
		return err
	}
	ra.Files = append(ra.Files, renderedFile{Path: as.Path, Mode: mode, Data: body})
	if as.Type == "unit" {
		ra.Units = append(ra.Units, path.Base(as.Path))
	}
	return nil
}

// assetBody is an asset's data, or its template executed over td.
func assetBody(action string, i int, as design.Asset, td any, funcs template.FuncMap) ([]byte, error) {
	if as.Template == "" {
		return []byte(as.Data), nil
	}
	t, err := template.New(fmt.Sprintf("%s/assets[%d]", action, i)).Option("missingkey=error").Funcs(funcs).Parse(as.Template)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, td); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// assetMode is an asset's file mode: its octal permissions, 0644 when
// it gives none.
func assetMode(perm string) (int64, error) {
	if perm == "" {
		return 0o644, nil
	}
	m, err := strconv.ParseInt(perm, 8, 32)
	if err != nil || m < 0 || m > 0o7777 {
		return 0, fmt.Errorf("permissions %q are not octal", perm)
	}
	return m, nil
}

// redact replaces the secret values a template received in err's text
// by "(secret NAME)", as they are and as %q quotes them (a rendered
// asset that does not parse is quoted in its error). Values shorter than
// drivers.MinRedactLen are replaced where they stand alone, not inside
// words (see drivers.Redact).
func redact(err error, revealed map[string]string) error {
	if len(revealed) == 0 {
		return err
	}
	repl := map[string]string{}
	for v, n := range revealed {
		repl[v] = "(secret " + n + ")"
		if q := strconv.Quote(v); q[1:len(q)-1] != v {
			repl[q[1:len(q)-1]] = "(secret " + n + ")"
		}
	}
	return errors.New(drivers.Redact(err.Error(), repl))
}

// checkAssetPath holds a path to what the bootstrap script handles
// safely: absolute and clean (validation checks that too), no control
// characters or backslashes, nothing under /.slipway, no first element
// starting with '-', and no blanks in a unit's name.
func checkAssetPath(p string, unit bool) error {
	switch {
	case !path.IsAbs(p) || path.Clean(p) != p || p == "/":
		return fmt.Errorf("path %q must be absolute and clean, like /etc/motd", p)
	case strings.ContainsFunc(p, func(r rune) bool { return unicode.IsControl(r) || r == '\\' }):
		return fmt.Errorf("path %q has control characters or backslashes", p)
	case p == "/.slipway" || strings.HasPrefix(p, "/.slipway/"):
		return fmt.Errorf("path %q is under /.slipway, which the assets archive keeps for its manifest", p)
	case strings.HasPrefix(p, "/-"):
		return fmt.Errorf("path %q starts with '-'", p)
	case unit && strings.ContainsFunc(path.Base(p), unicode.IsSpace):
		return fmt.Errorf("unit %q has blanks in its name", p)
	}
	return nil
}

// parsePackages reads a package list: names separated by blanks or
// lines; blank lines and # comments are ignored.
func parsePackages(b []byte) ([]string, error) {
	var out []string
	for line := range strings.Lines(string(b)) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, f := range strings.Fields(line) {
			if !pkgRE.MatchString(f) {
				return nil, fmt.Errorf("package name %q: use a name like nginx, nginx=1.18.0-6 or nginx:amd64", f)
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// renderFor renders the session's node's assets, mapping a render failure
// to a 500 that names the action and asset. The failure is recorded for
// the node's deployment: its bootstrap can't succeed, and fails at once.
func (s *Server) renderFor(c echo.Context) ([]renderedAction, error) {
	ss := sessionOf(c)
	acts, err := s.render(c.Request().Context(), ss.d, ss.n, ss.rec.Deployment)
	if err != nil {
		if re, ok := err.(*renderError); ok {
			s.log.Error().Str("request_id", requestIDOf(c)).Str("node", ss.rec.Node).Str("action", re.action).
				Int("asset", re.index).Err(re.err).Msg("boot action asset did not render")
			if err := s.recordRenderFailure(c.Request().Context(), ss.rec, re); err != nil {
				s.log.Warn().Str("request_id", requestIDOf(c)).Str("node", ss.rec.Node).Err(err).
					Msg("the render failure could not be recorded: the node's bootstrap waits until its deadline")
			}
			return nil, problem(http.StatusInternalServerError, re.Error())
		}
		return nil, err
	}
	return acts, nil
}

// Manifest is the archive's .slipway/manifest.json.
type Manifest struct {
	Deployment string           `json:"deployment"`
	Actions    []ManifestAction `json:"actions"`
}

// ManifestAction lists what one boot action delivers.
type ManifestAction struct {
	Name      string   `json:"name"`
	Signaling bool     `json:"signaling"`
	Files     []string `json:"files"`    // absolute paths
	Units     []string `json:"units"`    // unit file names
	Packages  []string `json:"packages"` // package names
}

// Files of the archive's .slipway directory, for the bootstrap script,
// which parses no JSON: one record a line, fields separated by a blank.
const (
	metaDir      = ".slipway/"
	metaManifest = metaDir + "manifest.json"
	metaActions  = metaDir + "actions.txt"  // "<action> <signaling: true|false>"
	metaUnits    = metaDir + "units.txt"    // "<action> <unit file name>"
	metaPackages = metaDir + "packages.txt" // "<action> <package>"
	metaFiles    = metaDir + "files.txt"    // archive member names of the files, for tar -T
)

func (s *Server) getAssets(c echo.Context) error {
	acts, err := s.renderFor(c)
	if err != nil {
		return err
	}
	ss := sessionOf(c)
	b, err := buildArchive(acts, ss.rec.Deployment, ss.rec.Issued)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="slipway-assets.tar.gz"`)
	return c.Blob(http.StatusOK, "application/gzip", b)
}

// gzipWriters are the archives' compressors, reused (Reset): a new one
// allocates about 800 KB, which at one archive per node was a fifth of
// the engine's allocations in a 10,000-node rollout. BestSpeed: the
// archive is small text fetched once per boot over the LAN; the default
// level took 3-4 times the CPU for an archive a fifth smaller
// (BenchmarkBuildArchive).
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
	return zw
}}

// buildArchive writes the gzip'd tar: the metadata, then each action's
// files at their paths without the leading "/", owned by root. Every
// entry has the time the deployment's token was issued, so the archive
// of a deployment is the same every time.
func buildArchive(acts []renderedAction, deployment string, at time.Time) ([]byte, error) {
	m := Manifest{Deployment: deployment, Actions: []ManifestAction{}}
	var actions, units, pkgs, files strings.Builder
	for _, a := range acts {
		ma := ManifestAction{Name: a.Name, Signaling: a.Signaling, Files: []string{}, Units: a.Units, Packages: a.Packages}
		fmt.Fprintf(&actions, "%s %t\n", a.Name, a.Signaling)
		for _, f := range a.Files {
			ma.Files = append(ma.Files, f.Path)
			files.WriteString(f.Path[1:] + "\n")
		}
		for _, u := range a.Units {
			fmt.Fprintf(&units, "%s %s\n", a.Name, u)
		}
		for _, p := range a.Packages {
			fmt.Fprintf(&pkgs, "%s %s\n", a.Name, p)
		}
		m.Actions = append(m.Actions, ma)
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, mode int64, data []byte) error {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)),
			Uid: 0, Gid: 0, Uname: "root", Gname: "root", ModTime: at.UTC().Truncate(time.Second)}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("archive entry %s: %w", name, err)
		}
		_, err := tw.Write(data)
		return err
	}
	for _, e := range []struct {
		name string
		data string
	}{{metaManifest, string(manifest) + "\n"}, {metaActions, actions.String()}, {metaUnits, units.String()},
		{metaPackages, pkgs.String()}, {metaFiles, files.String()}} {
		if err := add(e.name, 0o644, []byte(e.data)); err != nil {
			return nil, err
		}
	}
	for _, a := range acts {
		for _, f := range a.Files {
			if err := add(f.Path[1:], f.Mode, f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Packages is GET /v1/self/packages: the pkgList assets of each boot
// action that targets the node.
type Packages struct {
	Deployment string           `json:"deployment"`
	Actions    []ActionPackages `json:"actions"`
}

// ActionPackages are one action's packages.
type ActionPackages struct {
	Name     string   `json:"name"`
	Packages []string `json:"packages"`
}

func (s *Server) getPackages(c echo.Context) error {
	acts, err := s.renderFor(c)
	if err != nil {
		return err
	}
	out := Packages{Deployment: sessionOf(c).rec.Deployment, Actions: []ActionPackages{}}
	for _, a := range acts {
		out.Actions = append(out.Actions, ActionPackages{Name: a.Name, Packages: a.Packages})
	}
	return c.JSON(http.StatusOK, out)
}
