package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
	"github.com/slipway-dev/slipway/secrets"
)

// fakeSecrets resolves the names in set and counts lookups.
type fakeSecrets struct {
	set   map[string]bool
	asked map[string]int
}

func (f *fakeSecrets) resolve(_ context.Context, ref string) (drivers.Secret, error) {
	f.asked[ref]++
	if f.set[ref] {
		return drivers.NewSecret("value-of-" + ref), nil
	}
	return secrets.Resolver{}.Resolve("secret:preflight-test-unset-" + strings.TrimPrefix(ref, "secret:"))
}

var labInfo = drivers.SiteInfo{Reachable: true, Authenticated: true, BootImages: []string{"ubuntu/jammy", "ubuntu/noble"},
	Kernels:   map[string][]string{"ubuntu/jammy": {"ga-22.04", "hwe-22.04"}, "ubuntu/noble": {"ga-24.04"}},
	DefaultOS: "ubuntu", DefaultImage: "ubuntu/jammy"}

// TestPreflightPlanGroups: each secret is resolved once whatever the
// number of nodes needing it; findings name the users and the nodes;
// a template calling secret with a non-constant argument is a warning.
func TestPreflightPlanGroups(t *testing.T) {
	d := designtest.Example(t)
	d.BootActions["kubernetes-join"].Spec.Assets = append(d.BootActions["kubernetes-join"].Spec.Assets,
		design.Asset{Path: "/etc/rack-secret", Type: "file", Template: `{{ secret .Node.Rack }} {{ secret "KUBEADM-join-token" }}`})
	d.Nodes["r02-gpu02"].Spec.Platform = design.Platform{Image: "ubuntu/noble", Kernel: "hwe-24.04"}
	d.Nodes["r02-gpu01"].Spec.Platform = design.Platform{}
	f := &fakeSecrets{set: map[string]bool{"secret:bmc-admin": true}, asked: map[string]int{}}
	e := &Engine{cfg: Config{Secrets: f.resolve}}
	p := planPreflight(d, d.NodeNames(), true, nil)
	findings, warnings := e.checkPreflight(p, labInfo, true)
	if len(f.asked) != 2 || f.asked["secret:kubeadm-join-token"] != 1 || f.asked["secret:bmc-admin"] != 1 {
		t.Errorf("lookups %v, want each secret once", f.asked)
	}
	var texts []string
	for _, fi := range findings {
		texts = append(texts, fi.String())
	}
	want := []string{
		`secret "kubeadm-join-token" is not set (needed by boot action kubernetes-join on nodes r01-cmp01, r01-cmp02, … 6 more): set it with 'orchestrator secret set kubeadm-join-token' (or the environment variable SLIPWAY_SECRET_KUBEADM_JOIN_TOKEN), then retry the task`,
		`kernel "hwe-24.04" is not among the provisioner's kernels for ubuntu/noble (ga-24.04) (needed by node r02-gpu02): import it into the provisioner (MAAS syncs the kernels of the releases its boot source selections name), or give the nodes another platform.kernel; then retry the task`,
	}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "boot action kubernetes-join, assets[3] (/etc/rack-secret) calls secret with an argument that is not a constant string") {
		t.Errorf("warnings %q", warnings)
	}
	// prepare_nodes checks the BMC passwords only.
	f.asked = map[string]int{}
	p = planPreflight(d, d.NodeNames(), false, nil)
	if findings, _ := e.checkPreflight(p, drivers.SiteInfo{}, false); len(findings) != 0 || len(f.asked) != 1 {
		t.Errorf("BMC only: %v, asked %v", findings, f.asked)
	}
}

func TestQualifyImage(t *testing.T) {
	noDefault := drivers.SiteInfo{BootImages: []string{"ubuntu/jammy", "centos/jammy", "ubuntu/noble"}}
	for _, c := range []struct {
		image string
		info  drivers.SiteInfo
		want  string
		known bool
	}{
		{"jammy", labInfo, "ubuntu/jammy", true},
		{"", labInfo, "ubuntu/jammy", true},
		{"custom/x", labInfo, "custom/x", true},
		{"noble", noDefault, "ubuntu/noble", true},
		{"jammy", noDefault, "jammy", false}, // two OSes have a jammy: can't tell
		{"plucky", noDefault, "plucky", true},
		{"", noDefault, "", false},
	} {
		if got, known := qualifyImage(c.image, c.info); got != c.want || known != c.known {
			t.Errorf("%q: %q %t, want %q %t", c.image, got, known, c.want, c.known)
		}
	}
}

// BenchmarkPreflight10k plans and checks a 10,000-node generated site:
// one BMC password and one boot action secret for every node, one image.
func BenchmarkPreflight10k(b *testing.B) {
	dir := b.TempDir()
	if _, err := gensite.Write(dir, gensite.Options{Nodes: 10000}); err != nil {
		b.Fatal(err)
	}
	res, err := yamlingest.Load(context.Background(), []string{filepath.Join(dir)})
	if err != nil {
		b.Fatal(err)
	}
	d, fs := design.Build(res.Sources)
	if fs.HasErrors() {
		b.Fatal(fs)
	}
	// Every node's boot action calls a secret too.
	ba := d.BootActions["bootstrap"]
	ba.Spec.Assets = append(ba.Spec.Assets, design.Asset{Path: "/etc/join", Type: "file", Template: `{{ secret "join-token" }}`})
	f := &fakeSecrets{set: map[string]bool{"secret:bmc-admin": true, "secret:join-token": true}, asked: map[string]int{}}
	e := &Engine{cfg: Config{Secrets: f.resolve}}
	names := d.NodeNames()
	b.ResetTimer()
	for b.Loop() {
		p := planPreflight(d, names, true, nil)
		if findings, _ := e.checkPreflight(p, labInfo, true); len(findings) != 0 {
			b.Fatal(fmt.Sprint(findings))
		}
	}
}
