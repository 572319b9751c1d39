package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRenderYAMLNames: render -o yaml spells the names as the site files
// do (camelCase), -o json as the API (snake_case); a map's keys are data
// and keep their spelling.
func TestRenderYAMLNames(t *testing.T) {
	_, y, _ := cli(t, "render", "-o", "yaml", "--node", "r01-cmp01", exampleSite)
	_, j, _ := cli(t, "render", "-o", "json", "--node", "r01-cmp01", exampleSite)
	for _, want := range []string{"apiVersion: slipway/v1", "hostProfile: ", "primaryNetwork: ", "volumeGroups:"} {
		if !strings.Contains(y, want) {
			t.Errorf("render -o yaml lacks %q", want)
		}
	}
	if strings.Contains(y, "host_profile") || !strings.Contains(j, `"host_profile"`) {
		t.Errorf("yaml or json names mixed up:\n%.300s\n%.300s", y, j)
	}
	type inner struct {
		BootMAC string `json:"boot_mac" yaml:"bootMac"`
	}
	type doc struct {
		Labels map[string]inner `json:"labels"`
		List   []inner          `json:"list_of" yaml:"listOf"`
	}
	var b bytes.Buffer
	if err := writeDesignDoc(&b, "yaml", doc{Labels: map[string]inner{"boot_mac": {"m"}}, List: []inner{{"n"}}}); err != nil {
		t.Fatal(err)
	}
	want := "labels:\n  boot_mac:\n    bootMac: m\nlistOf:\n  - bootMac: n\n"
	if b.String() != want {
		t.Errorf("writeDesignDoc:\n%s\nwant\n%s", b.String(), want)
	}
}
