package main

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
)

// designNamesNode is an example node whose resolved design has kernel
// parameters, owner data and a hardware profile: the names that differ
// between the design schema and snake_case.
const designNamesNode = "r02-gpu02"

// TestDesignNamesEveryOutput: a resolved node is printed in the design
// schema's names (the site files', docs/site-schema.md) in every output:
// render -o yaml, render -o json, the API's GET
// /designs/{rev}/nodes/{name} and the design field of GET /nodes/{name}.
// The key paths of the four documents, walked in full, are one set; the
// envelope of the node's detail keeps its snake_case names.
func TestDesignNamesEveryOutput(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	if code, out, errs := cli(t, "--server", s.URL, "--token", s.Token[api.RoleOperator], "apply", exampleSite); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	_, y, _ := cli(t, "render", "-o", "yaml", "--node", designNamesNode, exampleSite)
	_, j, _ := cli(t, "render", "-o", "json", "--node", designNamesNode, exampleSite)
	var fromYAML, fromJSON any
	if err := yamlUnmarshal([]byte(y), &fromYAML); err != nil {
		t.Fatalf("render -o yaml: %v\n%s", err, y)
	}
	if err := json.Unmarshal([]byte(j), &fromJSON); err != nil {
		t.Fatalf("render -o json: %v\n%s", err, j)
	}
	fromAPI := apiJSON(t, s.URL+"/api/v1/designs/current/nodes/"+designNamesNode, s.Token[api.RoleViewer])
	detail := apiJSON(t, s.URL+"/api/v1/nodes/"+designNamesNode, s.Token[api.RoleViewer])
	dm, _ := detail.(map[string]any)
	if _, ok := dm["design_revision"]; !ok || dm["design"] == nil {
		t.Fatalf("node detail lacks its snake_case envelope or its design: %v", slices.Sorted(maps.Keys(dm)))
	}
	want := keyPaths(fromYAML, "", map[string]bool{})
	for _, k := range []string{"apiVersion", "spec.hostProfile", "spec.ownerData", "spec.platform.kernelParams", "spec.hardware.bootMode"} {
		if !want[k] {
			t.Errorf("render -o yaml lacks the schema's name %s", k)
		}
	}
	for name, doc := range map[string]any{"render -o json": fromJSON, "GET /designs/current/nodes/{name}": fromAPI, "GET /nodes/{name} design": dm["design"]} {
		got := keyPaths(doc, "", map[string]bool{})
		if !maps.Equal(got, want) {
			t.Errorf("%s names the node's fields otherwise than render -o yaml:\n only there: %v\n only in yaml: %v", name, missing(got, want), missing(want, got))
		}
	}
}

// keyPaths adds the dotted path of every key of v, at every depth (a
// list's items under the list's path), to out.
func keyPaths(v any, at string, out map[string]bool) map[string]bool {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			p := strings.TrimPrefix(at+"."+k, ".")
			out[p] = true
			keyPaths(c, p, out)
		}
	case []any:
		for _, c := range v {
			keyPaths(c, at+"[]", out)
		}
	}
	return out
}

// missing lists a's keys b lacks, sorted.
func missing(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// apiJSON is the JSON document GET url answers with the token.
func apiJSON(t *testing.T, url, token string) any {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return v
}
