package designlayer_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/designlayer"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// exampleSources collects the example design as an upload of one root.
func exampleSources(t *testing.T) designlayer.Sources {
	t.Helper()
	dir := designtest.ExampleDir()
	res, err := yamlingest.Load(t.Context(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	src, err := designlayer.Collect(dir, []string{dir}, res.Files)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func node(name, bmc, mgmt string) designlayer.Entry {
	return designlayer.Entry{Kind: design.KindNode, Name: name, Onboarding: "ob-1", Doc: map[string]any{
		"apiVersion": design.APIVersion, "kind": design.KindNode, "metadata": map[string]any{"name": name},
		"spec": map[string]any{"hostProfile": "compute", "hardwareProfile": "dell-r650", "oob": map[string]any{"address": bmc},
			"addressing": []any{map[string]any{"network": "pxe", "address": "dhcp"}, map[string]any{"network": "mgmt", "address": mgmt}}}}}
}

// TestSourcesRoundTrip: sources kept for a revision build the same design
// as the files; a copy serves another revision; a revision without
// sources says so.
func TestSourcesRoundTrip(t *testing.T) {
	ctx := t.Context()
	st := designlayer.New(memory.New())
	src := exampleSources(t)
	if len(src.Roots) != 1 || src.Roots[0] != "" || len(src.Files) < 5 || strings.Contains(src.Files[0].Name, "/work") {
		t.Fatalf("collected %+v", src.Roots)
	}
	if err := st.SaveSources(ctx, "rev-a", src); err != nil {
		t.Fatal(err)
	}
	if err := st.CopySources(ctx, "rev-a", "rev-b"); err != nil {
		t.Fatal(err)
	}
	got, err := st.Sources(ctx, "rev-b")
	if err != nil {
		t.Fatal(err)
	}
	d, fs, err := designlayer.Build(got, nil)
	if err != nil || fs.HasErrors() {
		t.Fatalf("build: %v %v", err, fs)
	}
	want, _, _ := designtest.Example(t).Canonical()
	body, _, _ := d.Canonical()
	if string(body) != string(want) {
		t.Error("the stored sources build another design than the files")
	}
	if _, err := st.Sources(ctx, "rev-c"); !errors.Is(err, designlayer.ErrNoSources) {
		t.Errorf("no sources: %v", err)
	}
	if err := st.CopySources(ctx, "rev-c", "rev-d"); !errors.Is(err, designlayer.ErrNoSources) {
		t.Errorf("copy of none: %v", err)
	}
}

// TestLayer: entries build over the sources as one more root; a broken
// entry is a finding at the layer's file; an upload that defines an
// entry takes it over.
func TestLayer(t *testing.T) {
	ctx := t.Context()
	st := designlayer.New(memory.New())
	src := exampleSources(t)
	ops, err := st.PutOps([]designlayer.Entry{node("r03-new01", "10.10.0.131", "10.12.0.131")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	entries, err := st.Layer(ctx)
	if err != nil || len(entries) != 1 || entries[0].Added.IsZero() {
		t.Fatalf("layer: %+v %v", entries, err)
	}
	d, fs, err := designlayer.Build(src, entries)
	if err != nil || fs.HasErrors() {
		t.Fatalf("build with the layer: %v %v", err, fs)
	}
	if n := d.Nodes["r03-new01"]; n == nil || n.Spec.OOB.Address != "10.10.0.131" || n.Spec.HostProfile != "compute" {
		t.Fatalf("the layer's node: %+v", n)
	}
	y, _ := designlayer.YAML(entries)
	if !strings.Contains(string(y), "# added by onboarding ob-1") || !strings.Contains(string(y), "name: r03-new01") {
		t.Errorf("YAML:\n%s", y)
	}

	clash := append(entries, node("r03-new02", "10.10.0.132", "10.12.0.131")) // r03-new01's mgmt address
	_, fs, _ = designlayer.Build(src, clash)
	found := false
	for _, f := range fs {
		if f.Severity == design.SeverityError && f.File == designlayer.LayerFile {
			found = true
		}
	}
	if !found {
		t.Errorf("a duplicate address in the layer: no error at %s: %v", designlayer.LayerFile, fs)
	}

	srcs, _ := src.Parse()
	kept, taken := designlayer.Split(entries, designlayer.Defined(srcs))
	if len(kept) != 1 || len(taken) != 0 {
		t.Errorf("split over the example: kept %d taken %d", len(kept), len(taken))
	}
	more, _ := yamlingest.ParseFile(filepath.Join("git", "r03.yaml"), y, 1)
	kept, taken = designlayer.Split(entries, designlayer.Defined(append(srcs, more...)))
	if len(kept) != 0 || len(taken) != 1 || taken[0].Key() != "Node/r03-new01" {
		t.Errorf("split over an upload that defines the node: kept %d taken %+v", len(kept), taken)
	}
	if err := st.Write(ctx, designlayer.DeleteOps([]string{"Node/r03-new01"})...); err != nil {
		t.Fatal(err)
	}
	if entries, _ := st.Layer(ctx); len(entries) != 0 {
		t.Errorf("after delete: %+v", entries)
	}
}
