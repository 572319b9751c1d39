package design

import (
	"strings"
	"testing"
)

func TestParseSecretRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SecretRef
	}{
		{"secret:bmc-admin", SecretRef{Scheme: "secret", Name: "bmc-admin"}},
		{"secret:maas.api_key-2", SecretRef{Scheme: "secret", Name: "maas.api_key-2"}},
		{"env:BMC_PASS", SecretRef{Scheme: "env", Name: "BMC_PASS"}},
		{"env:_x1", SecretRef{Scheme: "env", Name: "_x1"}},
		{"file:/etc/slipway/x", SecretRef{Scheme: "file", Name: "/etc/slipway/x"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSecretRef(tc.in)
			if err != nil {
				t.Fatalf("ParseSecretRef(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("ParseSecretRef(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

func TestParseSecretRefErrors(t *testing.T) {
	for _, tc := range []struct {
		in  string
		msg string // a substring of the error
	}{
		{"hunter2", "not a secret reference"},
		{"", "not a secret reference"},
		{"secret:", "secret:NAME needs a NAME"},
		{"secret:-x", "secret:NAME needs a NAME"},
		{"secret:my password", "secret:NAME needs a NAME"},
		{"env:", "env:VAR needs"},
		{"env:1X", "env:VAR needs"},
		{"env:BMC-PASS", "env:VAR needs"},
		{"file:", "file:/path needs an absolute path"},
		{"file:relative", "file:/path needs an absolute path"},
		{"file:/etc/x\x00y", "file:/path needs an absolute path"},
		{"vault:x", "unknown scheme"},
		{"SECRET:x", "unknown scheme"},
		{"p@ss:w0rd!", "unknown scheme"},
		{"Tr0ub4dor&3:correct-horse", "unknown scheme"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSecretRef(tc.in)
			if err == nil {
				t.Fatalf("ParseSecretRef(%q) = %+v, want an error", tc.in, got)
			}
			if got != (SecretRef{}) {
				t.Errorf("ParseSecretRef(%q) returned %+v with its error, want the zero SecretRef", tc.in, got)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("error %q does not contain %q", msg, tc.msg)
			}
			// The input may be a clear-text secret: the error must not repeat
			// it, nor the part after the scheme. (An empty input, or a bare
			// "secret:" that the error's own advice spells, is no secret: only
			// its name part, which is empty, is checked.)
			_, name, _ := strings.Cut(tc.in, ":")
			if tc.in != "" && !strings.HasSuffix(tc.in, ":") && strings.Contains(msg, tc.in) {
				t.Errorf("error %q repeats the input", msg)
			}
			if len(name) >= 2 && strings.Contains(msg, name) {
				t.Errorf("error %q repeats the input's name %q", msg, name)
			}
		})
	}
}
