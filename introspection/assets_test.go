package introspection

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
)

// untar reads a gzip'd tar into its headers and contents, by name.
func untar(t *testing.T, b []byte) (map[string]*tar.Header, map[string]string, []string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	hdrs, data := map[string]*tar.Header{}, map[string]string{}
	var order []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := hdrs[h.Name]; dup {
			t.Errorf("entry %s twice", h.Name)
		}
		hdrs[h.Name], data[h.Name] = h, string(body)
		order = append(order, h.Name)
	}
	return hdrs, data, order
}

func TestAssetsArchive(t *testing.T) {
	e := newEnv(t)
	for _, node := range []string{"r01-cmp01", "r01-gpu01", "r02-cmp02"} {
		t.Run(node, func(t *testing.T) {
			tok := e.issue(node, "4")
			r := e.do("GET", "/v1/self/assets", tok, nil)
			if r.code != 200 || r.hdr.Get("Content-Type") != "application/gzip" {
				t.Fatalf("status %d, type %q: %s", r.code, r.hdr.Get("Content-Type"), r.body)
			}
			hdrs, data, _ := untar(t, r.body)
			n := e.d.Nodes[node]
			var files []string
			var want Manifest
			want.Deployment = "4"
			for _, name := range e.d.BootActionsFor(n) {
				ba := e.d.BootActions[name]
				ma := ManifestAction{Name: name, Signaling: ba.Spec.Signaling, Files: []string{}, Units: []string{}, Packages: []string{}}
				for _, as := range ba.Spec.Assets {
					if as.Type == "pkgList" {
						pk, err := parsePackages([]byte(as.Data))
						if err != nil {
							t.Fatal(err)
						}
						ma.Packages = append(ma.Packages, pk...)
						if _, ok := hdrs[strings.TrimPrefix(as.Path, "/")]; ok {
							t.Errorf("pkgList %s is in the archive", as.Path)
						}
						continue
					}
					ma.Files = append(ma.Files, as.Path)
					if as.Type == "unit" {
						ma.Units = append(ma.Units, as.Path[strings.LastIndex(as.Path, "/")+1:])
					}
					files = append(files, as.Path[1:])
					h := hdrs[as.Path[1:]]
					if h == nil {
						t.Errorf("%s (%s) missing", as.Path, name)
						continue
					}
					mode := int64(0o644)
					if as.Permissions != "" {
						mode, _ = strconv.ParseInt(as.Permissions, 8, 32)
					}
					if h.Mode != mode || h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Gname != "root" || h.Typeflag != tar.TypeReg {
						t.Errorf("%s: mode %o uid %d gid %d %s:%s type %c", as.Path, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.Typeflag)
					}
					if as.Data != "" && data[as.Path[1:]] != as.Data {
						t.Errorf("%s: data not delivered as written", as.Path)
					}
					if as.Template != "" && (strings.Contains(data[as.Path[1:]], "{{") || !strings.Contains(data[as.Path[1:]], node)) {
						t.Errorf("%s: template not rendered for %s:\n%s", as.Path, node, data[as.Path[1:]])
					}
				}
				want.Actions = append(want.Actions, ma)
			}
			// The example's report unit: the node's hostname and its action's report URL.
			unit := data["etc/systemd/system/slipway-bootstrap-report.service"]
			if !strings.Contains(unit, "Description=Report bootstrap of "+node+" to Slipway") ||
				!strings.Contains(unit, testURL+"/v1/self/actions/node-bootstrap") {
				t.Errorf("report unit:\n%s", unit)
			}
			var got Manifest
			if err := json.Unmarshal([]byte(data[metaManifest]), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("manifest (-want +got):\n%s", diff)
			}
			var actions, units, pkgs strings.Builder
			for _, a := range want.Actions {
				actions.WriteString(a.Name + " " + strconv.FormatBool(a.Signaling) + "\n")
				for _, u := range a.Units {
					units.WriteString(a.Name + " " + u + "\n")
				}
				for _, p := range a.Packages {
					pkgs.WriteString(a.Name + " " + p + "\n")
				}
			}
			for name, w := range map[string]string{metaActions: actions.String(), metaUnits: units.String(),
				metaPackages: pkgs.String(), metaFiles: strings.Join(files, "\n") + "\n"} {
				if data[name] != w {
					t.Errorf("%s = %q, want %q", name, data[name], w)
				}
			}
			if len(hdrs) != len(files)+5 {
				t.Errorf("%d entries, want %d files and 5 metadata files", len(hdrs), len(files))
			}
			// The same deployment gives the same archive.
			if r2 := e.do("GET", "/v1/self/assets", tok, nil); !bytes.Equal(r2.body, r.body) {
				t.Error("two fetches of the assets differ")
			}
		})
	}
}

func TestTemplateData(t *testing.T) {
	e := newEnv(t)
	d := cloneDesign(e.d)
	d.BootActions["probe"] = &design.BootAction{Metadata: design.ObjectMeta{Name: "probe"}, Spec: design.BootActionSpec{
		NodeFilter: &design.NodeFilter{Names: []string{"r01-cmp01"}},
		Assets: []design.Asset{{Path: "/etc/probe", Type: "file", Permissions: "0600", Template: strings.Join([]string{
			"{{.Node.Name}} {{.Node.Hostname}} {{.Node.Domain}} {{.Node.FQDN}} {{.Node.Rack}}",
			"{{.Node.Labels.role}} {{index .Node.Tags 0}}",
			"{{.Node.Networks.mgmt.Address}} {{.Node.Networks.mgmt.CIDR}} {{.Node.Networks.mgmt.Prefix}} {{.Node.Networks.mgmt.Gateway}} {{.Node.Networks.mgmt.MTU}}",
			"{{.Node.Networks.storage.VLAN}} {{.Node.Networks.pxe.Address}}",
			"{{.Action.ID}} {{.Action.ReportURL}} {{.Site.Domain}} {{secret \"kubeadm-join-token\"}}",
		}, "\n")}}}}
	e.store(d)
	tok := e.issueWith(d, "r01-cmp01", "1")
	_, data, _ := untar(t, e.do("GET", "/v1/self/assets", tok, nil).body)
	want := strings.Join([]string{
		"r01-cmp01 r01-cmp01 lab.example.net r01-cmp01.lab.example.net r01",
		"compute slipway-managed",
		"10.12.0.101 10.12.0.0/24 24 10.12.0.1 1500",
		"30 dhcp",
		"probe " + testURL + "/v1/self/actions/probe lab.example.net abcdef.0123456789abcdef",
	}, "\n")
	if data["etc/probe"] != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", data["etc/probe"], want)
	}
}

func TestRenderFailure(t *testing.T) {
	e := newEnv(t)
	d := cloneDesign(e.d)
	d.BootActions["broken"] = &design.BootAction{Metadata: design.ObjectMeta{Name: "broken"}, Spec: design.BootActionSpec{
		Signaling: true,
		Assets: []design.Asset{{Path: "/etc/ok", Type: "file", Data: "ok\n"},
			{Path: "/etc/broken", Type: "file", Template: "{{ .Node.Networks.nosuch.Address }}"}}}}
	e.store(d)
	tok := e.issueWith(d, "r01-cmp01", "1")
	for _, path := range []string{"/v1/self/assets", "/v1/self/packages"} {
		r := e.do("GET", path, tok, nil)
		if r.code != 500 {
			t.Fatalf("%s: status %d, want 500", path, r.code)
		}
		p := r.problem(t)
		if !strings.Contains(p.Detail, "boot action broken, assets[1] (/etc/broken)") || strings.Contains(p.Detail, tok[4:]) {
			t.Errorf("%s: detail %q", path, p.Detail)
		}
	}
	// /v1/self does not render: it still answers.
	if r := e.do("GET", "/v1/self", tok, nil); r.code != 200 {
		t.Errorf("/v1/self: %d", r.code)
	}
	// A secret that can't be resolved fails the same way.
	e2 := newEnv(t, func(c *Config) { c.Secret = nil })
	r := e2.do("GET", "/v1/self/assets", e2.issue("r01-cmp01", "1"), nil)
	if r.code != 500 || !strings.Contains(r.problem(t).Detail, "kubernetes-join") {
		t.Errorf("no secret resolver: %d %s", r.code, r.body)
	}
}

func TestAssetConflicts(t *testing.T) {
	e := newEnv(t)
	for name, as := range map[string]design.Asset{
		"same path as another action": {Path: "/etc/motd", Type: "file", Data: "x"},
		"reserved path":               {Path: "/.slipway/manifest.json", Type: "file", Data: "x"},
		"dash path":                   {Path: "/-rf", Type: "file", Data: "x"},
		"bad package":                 {Path: "/etc/p", Type: "pkgList", Data: "good\nrm -rf /;\n"},
		"control char":                {Path: "/etc/a\nb", Type: "file", Data: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			d := cloneDesign(e.d)
			d.BootActions["zz-extra"] = &design.BootAction{Metadata: design.ObjectMeta{Name: "zz-extra"},
				Spec: design.BootActionSpec{Assets: []design.Asset{as}}}
			e.store(d)
			r := e.do("GET", "/v1/self/assets", e.issueWith(d, "r01-cmp01", "1"), nil)
			if r.code != 500 || !strings.Contains(r.problem(t).Detail, "boot action zz-extra, assets[0]") {
				t.Errorf("status %d: %s", r.code, r.body)
			}
		})
	}
}

func TestPackages(t *testing.T) {
	e := newEnv(t)
	tok := e.issue("r01-gpu01", "1")
	r := e.do("GET", "/v1/self/packages", tok, nil)
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	var got Packages
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	want := Packages{Deployment: "1", Actions: []ActionPackages{}}
	for _, name := range e.d.BootActionsFor(e.d.Nodes["r01-gpu01"]) {
		ap := ActionPackages{Name: name, Packages: []string{}}
		for _, as := range e.d.BootActions[name].Spec.Assets {
			if as.Type == "pkgList" {
				for l := range strings.Lines(as.Data) {
					if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
						ap.Packages = append(ap.Packages, l)
					}
				}
			}
		}
		want.Actions = append(want.Actions, ap)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(got.Actions, func(a ActionPackages) bool { return len(a.Packages) > 0 }) {
		t.Log("the example has no pkgList asset for r01-gpu01: only the empty lists were checked")
	}
}

func TestParsePackages(t *testing.T) {
	for in, want := range map[string][]string{
		"":                              nil,
		"# only a comment\n\n":          nil,
		"nginx\n  curl  \n# x\n\njq\n":  {"nginx", "curl", "jq"},
		"a b\tc # trailing comment\nd":  {"a", "b", "c", "d"},
		"libc6:amd64 nginx=1.18.0-6\n":  {"libc6:amd64", "nginx=1.18.0-6"},
		"g++ python3.12 lib_x ~tilde\n": nil, // "~tilde" is refused
	} {
		got, err := parsePackages([]byte(in))
		if strings.Contains(in, "~tilde") {
			if err == nil {
				t.Errorf("%q: no error", in)
			}
			continue
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"rm;", "$(x)", "`x`", "a|b", "'q'", "-o"} {
		if _, err := parsePackages([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// cloneDesign copies a design deep enough to add or change boot actions
// and nodes.
func cloneDesign(d *design.Design) *design.Design {
	c := *d
	c.BootActions = map[string]*design.BootAction{}
	for k, v := range d.BootActions {
		c.BootActions[k] = v
	}
	c.Nodes = map[string]*design.Node{}
	for k, v := range d.Nodes {
		c.Nodes[k] = v
	}
	return &c
}
