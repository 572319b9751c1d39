package introspection

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func TestUserData(t *testing.T) {
	e := newEnv(t)
	ud, err := e.srv.UserData(t.Context(), e.d, "r02-cmp01", "3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(ud), "#cloud-config\n") {
		t.Fatalf("not a cloud-config:\n%s", ud)
	}
	var cc struct {
		WriteFiles []struct{ Path, Owner, Permissions, Content string } `yaml:"write_files"`
		RunCmd     []string                                             `yaml:"runcmd"`
		nodeConfig `yaml:",inline"`
	}
	if err := yaml.Unmarshal(ud, &cc); err != nil {
		t.Fatal(err)
	}
	site := e.d.Site.Spec
	wantNode := nodeConfig{Hostname: "r02-cmp01", FQDN: "r02-cmp01.lab.example.net", SSHKeys: site.SSHKeys,
		NTP: &ntpConfig{Enabled: true, Servers: site.NTP.Servers}}
	if diff := cmp.Diff(wantNode, cc.nodeConfig); diff != "" || !strings.Contains(string(ud), "\nprefer_fqdn_over_hostname: false\n") {
		t.Errorf("the node's names, keys and NTP (-want +got):\n%s\n%s", diff, ud)
	}
	tok := e.srv.Token("r02-cmp01", "3")
	want := map[string]struct{ perm, content string }{
		EnvFile:    {"0600", "SLIPWAY_URL='" + testURL + "'\nSLIPWAY_TOKEN='" + tok + "'\n"},
		HeaderFile: {"0600", "Authorization: Bearer " + tok + "\n"},
		ScriptPath: {"0755", BootstrapScript()},
	}
	if len(cc.WriteFiles) != len(want) {
		t.Errorf("%d files", len(cc.WriteFiles))
	}
	for _, f := range cc.WriteFiles {
		w, ok := want[f.Path]
		if !ok || f.Permissions != w.perm || f.Content != w.content || f.Owner != "root:root" {
			t.Errorf("write_files %s: %s %s %q", f.Path, f.Permissions, f.Owner, f.Content)
		}
	}
	if len(cc.RunCmd) != 1 || cc.RunCmd[0] != ScriptPath {
		t.Errorf("runcmd %q", cc.RunCmd)
	}
	if len(tok) != TokenLen || !wellFormed(tok) {
		t.Errorf("token form: %d characters", len(tok))
	}
	// The state holds the token's hash, never the token.
	rec, err := e.st.Get(t.Context(), collTokenOf, "r02-cmp01")
	if err != nil || string(rec) != hashToken(tok) {
		t.Errorf("node_token_of: %q %v", rec, err)
	}
	raw, err := e.st.Get(t.Context(), collTokens, hashToken(tok))
	if err != nil || !strings.Contains(string(raw), `"revision":"`+e.rev+`"`) || !strings.Contains(string(raw), `"deployment":"3"`) {
		t.Errorf("node_tokens: %s %v", raw, err)
	}
}

func TestBootstrapScriptShape(t *testing.T) {
	s := BootstrapScript()
	for _, want := range []string{"#!/bin/sh\n", "set -eu", "SLIPWAY_ROOT", "SLIPWAY_ENV", "--retry 10 --retry-connrefused",
		"-H @\"$hdr\"", "--no-same-owner", "systemctl enable --now", "apt-get install", "/v1/self/actions/"} {
		if !strings.Contains(s, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	// The token never goes on a command line.
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "$SLIPWAY_TOKEN") && !strings.Contains(line, "printf 'Authorization: Bearer %s\\n'") &&
			!strings.Contains(line, "[ -n \"$SLIPWAY_TOKEN\" ]") {
			t.Errorf("the token is used in: %s", line)
		}
	}
}

func TestNewChecks(t *testing.T) {
	e := newEnv(t)
	for name, cfg := range map[string]Config{
		"no store":      {URL: testURL, Key: testKey},
		"short key":     {Store: e.st, URL: testURL, Key: testKey[:16]},
		"no URL":        {Store: e.st, Key: testKey},
		"ftp URL":       {Store: e.st, URL: "ftp://x", Key: testKey},
		"query":         {Store: e.st, URL: testURL + "/?a=b", Key: testKey},
		"quote in URL":  {Store: e.st, URL: "http://x/'a", Key: testKey},
		"space in URL":  {Store: e.st, URL: "http://x/a b", Key: testKey},
		"bad proxy":     {Store: e.st, URL: testURL, Key: testKey, TrustedProxies: []string{"127.0.0.1"}},
		"user info URL": {Store: e.st, URL: "http://u:p@x", Key: testKey},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	s, err := New(Config{Store: e.st, URL: testURL + "/", Key: testKey})
	if err != nil || s.baseURL != testURL {
		t.Errorf("trailing slash: %v %q", err, s.baseURL)
	}
}
