package design

import (
	"io"
	"slices"
	"strings"
	"testing"
	"text/template"
)

func TestTemplateSecrets(t *testing.T) {
	for _, c := range []struct {
		tmpl    string
		names   []string
		dynamic bool
	}{
		{`token='{{ secret "kubeadm-join-token" }}'`, []string{"kubeadm-join-token"}, false},
		{`{{ "b" | secret }} {{ secret "a" }} {{ secret "b" }}`, []string{"a", "b"}, false},
		{`{{ printf "%s-%s" (secret "x") (secret "y") | printf "%q" }}`, []string{"x", "y"}, false},
		{`{{ if .On }}{{ secret "in-if" }}{{ else }}{{ secret "in-else" }}{{ end }}`, []string{"in-else", "in-if"}, false},
		{`{{ range .List }}{{ with secret "in-with" }}{{ . }}{{ end }}{{ end }}`, []string{"in-with"}, false},
		{`{{ define "part" }}{{ secret "in-define" }}{{ end }}{{ template "part" . }}`, []string{"in-define"}, false},
		{`{{ $t := secret "assigned" }}{{ $t }}`, []string{"assigned"}, false},
		{`{{ (secret "chained").X }}`, []string{"chained"}, false},
		{`no secrets: {{ .Node }} {{ "secret" }}`, nil, false},
		{`{{ secret .Rack }}`, nil, true},
		{`{{ secret (printf "bmc-%s" .Rack) }} {{ secret "fixed" }}`, []string{"fixed"}, true},
		{`{{ .Rack | secret }}`, nil, true},
		{`{{ secret "a" "b" }}`, nil, true},
		{`{{ printf "%v" secret }}`, nil, true},
		{`{{ secret (secret "inner") }}`, []string{"inner"}, true},
	} {
		names, dynamic, err := TemplateSecrets("t", c.tmpl)
		if err != nil || !slices.Equal(names, c.names) || dynamic != c.dynamic {
			t.Errorf("%s: %q, dynamic %t, %v; want %q, %t", c.tmpl, names, dynamic, err, c.names, c.dynamic)
		}
	}
	if _, _, err := TemplateSecrets("t", `{{ secret "a" `); err == nil {
		t.Error("a template that does not parse: no error")
	}
}

// TestTemplateSecretsMatchesRendering cross-checks the parse tree walk
// with text/template itself: rendering asks the secret function for
// exactly the names the walk found.
func TestTemplateSecretsMatchesRendering(t *testing.T) {
	data := map[string]any{"On": true, "List": []int{1}}
	for _, tmpl := range []string{
		`{{ "b" | secret }} {{ secret "a" }}`,
		`{{ printf "%s-%s" (secret "x") (secret "y") }}`,
		`{{ range .List }}{{ with secret "w" }}{{ . }}{{ end }}{{ end }}{{ if .On }}{{ secret "i" }}{{ end }}`,
		`{{ define "p" }}{{ secret "d" }}{{ end }}{{ template "p" . }}{{ $t := secret "v" }}{{ $t }}`,
	} {
		var asked []string
		funcs := TemplateFuncs(func(name string) (string, error) {
			if !slices.Contains(asked, name) {
				asked = append(asked, name)
			}
			return "value", nil
		})
		tt := template.Must(template.New("t").Funcs(funcs).Parse(tmpl))
		if err := tt.Execute(io.Discard, data); err != nil {
			t.Fatalf("%s: %v", tmpl, err)
		}
		slices.Sort(asked)
		names, dynamic, err := TemplateSecrets("t", tmpl)
		if err != nil || dynamic || !slices.Equal(names, asked) {
			t.Errorf("%s: the walk found %q (dynamic %t, %v), rendering asked for %q", tmpl, names, dynamic, err, strings.Join(asked, ","))
		}
	}
}
