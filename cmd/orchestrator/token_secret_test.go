package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/secrets"
	"github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// cliIn runs one command line in-process with stdin as standard input.
func cliIn(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runIn(t.Context(), stdin, args, &out, &errb)
	return code, out.String(), errb.String()
}

// withState opens the state file, runs fn and closes it.
func withState(t *testing.T, path string, fn func(*bolt.Store)) {
	t.Helper()
	st, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fn(st)
}

func TestTokenCLI(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.db")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "create", "--state", state}, "--role admin, operator or viewer"},
		{[]string{"token", "create", "--role", "root", "--state", state}, "use admin, operator or viewer"},
		{[]string{"token", "create", "--role", "viewer", "-o", "xml", "--state", state}, "use text (or table), json or yaml"},
		{[]string{"token", "bogus"}, "use create, list or revoke"},
	} {
		code, _, errs := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, exitUsage, tc.want)
		}
	}
	if code, out, _ := cli(t, "token"); code != 0 || !strings.Contains(out, "revoke") {
		t.Errorf("token alone: exit %d, %q; want its help", code, out)
	}
	if code, out, _ := cli(t, "token", "list", "--state", state); code != 0 || !strings.Contains(out, "no API tokens") {
		t.Errorf("empty list: exit %d, %q", code, out)
	}

	code, out, errs := cli(t, "token", "create", "--role", "operator", "--name", "ci", "--state", state)
	if code != 0 {
		t.Fatalf("create: exit %d: %s", code, errs)
	}
	opToken := strings.TrimSuffix(out, "\n")
	if strings.Count(out, "\n") != 1 || len(opToken) != auth.TokenLen || !strings.HasPrefix(opToken, auth.Prefix) {
		t.Fatalf("create printed %q, want the token alone on one line", out)
	}
	if !strings.Contains(errs, "store it now") || !strings.Contains(errs, "not shown again") || strings.Contains(errs, opToken) {
		t.Errorf("create's note: %q", errs)
	}

	code, out, errs = cli(t, "token", "create", "--role", "admin", "-o", "json", "--state", state)
	if code != 0 {
		t.Fatalf("create -o json: exit %d: %s", code, errs)
	}
	var created struct {
		Token, ID, Name string
		Role            auth.Role
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.Token, auth.Prefix) || created.Role != auth.RoleAdmin || len(created.ID) != auth.IDLen {
		t.Fatalf("create -o json: %v: %s", err, out)
	}
	adminToken := created.Token

	var opID string
	withState(t, state, func(st *bolt.Store) {
		s := auth.NewStore(st)
		tok, err := s.Verify(t.Context(), opToken)
		if err != nil || tok.Role != auth.RoleOperator || tok.Name != "ci" {
			t.Fatalf("the printed token does not verify: %+v, %v", tok, err)
		}
		opID = tok.ID
		if tok, err := s.Verify(t.Context(), adminToken); err != nil || tok.ID != created.ID {
			t.Fatalf("the JSON token does not verify: %+v, %v", tok, err)
		}
	})

	code, out, _ = cli(t, "token", "list", "--state", state)
	if code != 0 {
		t.Fatalf("list: exit %d", code)
	}
	for _, want := range []string{"ID", "LAST USED", opID, "ci", "operator", created.ID, "admin"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	code, jout, _ := cli(t, "token", "list", "-o", "json", "--state", state)
	var toks []auth.Token
	if err := json.Unmarshal([]byte(jout), &toks); code != 0 || err != nil || len(toks) != 2 {
		t.Fatalf("list -o json: exit %d, %v: %s", code, err, jout)
	}
	if toks[0].ID != opID || toks[1].ID != created.ID || toks[0].LastUsed.IsZero() || toks[0].Role != auth.RoleOperator {
		t.Errorf("list -o json: %+v", toks)
	}
	for _, p := range []string{opToken, adminToken} {
		if strings.Contains(out, p[len(auth.Prefix):]) || strings.Contains(jout, p[len(auth.Prefix):]) {
			t.Errorf("a list shows a token")
		}
	}

	// A token pasted instead of an ID is refused and not repeated.
	code, _, errs = cli(t, "token", "revoke", opToken, "--state", state)
	if code != exitUsage || strings.Contains(errs, opToken[len(auth.Prefix):]) || !strings.Contains(errs, "token list") {
		t.Errorf("revoke of a token string: exit %d, %q", code, errs)
	}
	if code, out, errs := cli(t, "token", "revoke", opID, "--state", state); code != 0 || out != "token "+opID+" revoked\n" {
		t.Fatalf("revoke: exit %d, %q, %q", code, out, errs)
	}
	if code, _, errs := cli(t, "token", "revoke", opID, "--state", state); code != exitUsage || !strings.Contains(errs, "token list") {
		t.Errorf("second revoke: exit %d, %q", code, errs)
	}
	if _, out, _ := cli(t, "token", "list", "--state", state); strings.Contains(out, opID) || !strings.Contains(out, created.ID) {
		t.Errorf("list after revoke:\n%s", out)
	}
	withState(t, state, func(st *bolt.Store) {
		if _, err := auth.NewStore(st).Verify(t.Context(), opToken); err == nil {
			t.Error("a revoked token verifies")
		}
	})

	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{opToken, adminToken} {
		if bytes.Contains(raw, []byte(p[len(auth.Prefix):])) {
			t.Error("the state file holds a token")
		}
	}
}

func TestSecretCLI(t *testing.T) {
	t.Setenv(store.KeyEnv, "")
	dir := t.TempDir()
	state := filepath.Join(dir, "db", "state.db")
	keyFile := filepath.Join(dir, "db", store.DefaultKeyFile)
	const value = "v3ry-s3cret-Value"

	// Wrong uses: nothing stored, no value repeated, no key file made.
	for _, tc := range []struct {
		stdin io.Reader
		args  []string
		want  string
	}{
		{nil, []string{"secret", "set", "bmc-admin", "--state", state}, "standard input"},
		{strings.NewReader("\n"), []string{"secret", "set", "bmc-admin", "--state", state}, "standard input"},
		{nil, []string{"secret", "set", "bmc-admin", value, "--state", state}, "never from the command line"},
		{strings.NewReader(value), []string{"secret", "set", "Bad/Name" + value, "--state", state}, "invalid secret name"},
		{nil, []string{"secret", "bogus"}, "use set, list or delete"},
	} {
		code, out, errs := cliIn(t, tc.stdin, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, errs, exitUsage, tc.want)
		}
		if strings.Contains(out+errs, value) {
			t.Errorf("%v: the output repeats the value: %q %q", tc.args, out, errs)
		}
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("a failed set made the key file: %v", err)
	}

	code, out, errs := cliIn(t, strings.NewReader(value+"\n"), "secret", "set", "bmc-admin", "--state", state)
	if code != 0 || !strings.Contains(out, "secret:bmc-admin") {
		t.Fatalf("set: exit %d, %q, %q", code, out, errs)
	}
	if !strings.Contains(errs, "created the secret key file "+keyFile) {
		t.Errorf("set did not say it created the key file: %q", errs)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v", err)
	}
	code, _, errs = cliIn(t, strings.NewReader("maas-key\r\n\n"), "secret", "set", "maas.api-key", "--state", state)
	if code != 0 || strings.Contains(errs, "created") {
		t.Fatalf("second set: exit %d, %q", code, errs)
	}

	code, out, _ = cli(t, "secret", "list", "--state", state)
	if code != 0 || !strings.Contains(out, "bmc-admin") || !strings.Contains(out, "maas.api-key") || !strings.Contains(out, "UPDATED") {
		t.Errorf("list: exit %d:\n%s", code, out)
	}
	code, jout, _ := cli(t, "secret", "list", "-o", "json", "--state", state)
	var infos []store.Info
	if err := json.Unmarshal([]byte(jout), &infos); code != 0 || err != nil || len(infos) != 2 || infos[0].Name != "bmc-admin" || infos[0].Created.IsZero() {
		t.Errorf("list -o json: exit %d, %v: %s", code, err, jout)
	}
	if strings.Contains(out+jout, value) || strings.Contains(out+jout, "maas-key") {
		t.Errorf("a list shows a value:\n%s%s", out, jout)
	}

	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	keyText, _ := os.ReadFile(keyFile)
	for _, s := range []string{value, "maas-key", base64.StdEncoding.EncodeToString([]byte(value)), strings.TrimSpace(string(keyText))} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the state file holds %q", s)
		}
	}

	// The engine's resolver reads them with the key file.
	withState(t, state, func(st *bolt.Store) {
		key, err := store.LoadOrCreateKey(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.New(st, key)
		if err != nil {
			t.Fatal(err)
		}
		r := secrets.Resolver{Store: s}
		for ref, want := range map[string]string{"secret:bmc-admin": value, "secret:maas.api-key": "maas-key"} {
			if got, err := r.ResolveContext(t.Context(), ref); err != nil || got.Reveal() != want {
				t.Errorf("%s: %v; want the value set", ref, err)
			}
		}
	})

	// Another key: refused rather than mixing keys.
	other := filepath.Join(dir, "other.key")
	code, _, errs = cliIn(t, strings.NewReader("x"), "secret", "set", "third", "--key-file", other, "--state", state)
	if code != exitUsage || !strings.Contains(errs, "another key") {
		t.Errorf("set with another key: exit %d, %q", code, errs)
	}
	// --key-file and the environment together are ambiguous.
	t.Setenv(store.KeyEnv, base64.StdEncoding.EncodeToString(make([]byte, store.KeySize)))
	code, _, errs = cliIn(t, strings.NewReader("x"), "secret", "set", "third", "--key-file", other, "--state", state)
	if code != exitUsage || !strings.Contains(errs, "use one of them") {
		t.Errorf("--key-file with %s: exit %d, %q", store.KeyEnv, code, errs)
	}
	t.Setenv(store.KeyEnv, "")

	if code, out, errs := cli(t, "secret", "delete", "bmc-admin", "--state", state); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("delete: exit %d, %q, %q", code, out, errs)
	}
	if code, _, errs := cli(t, "secret", "delete", "bmc-admin", "--state", state); code != exitUsage || !strings.Contains(errs, "orchestrator secret set bmc-admin") {
		t.Errorf("second delete: exit %d, %q", code, errs)
	}
	if _, out, _ := cli(t, "secret", "list", "--state", state); strings.Contains(out, "bmc-admin") || !strings.Contains(out, "maas.api-key") {
		t.Errorf("list after delete:\n%s", out)
	}
}

// TestSecretCLIKeyFromEnv: with SLIPWAY_SECRET_KEY set, no key file is made.
func TestSecretCLIKeyFromEnv(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	key := bytes.Repeat([]byte{5}, store.KeySize)
	t.Setenv(store.KeyEnv, base64.StdEncoding.EncodeToString(key))
	code, _, errs := cliIn(t, strings.NewReader("from-env-key"), "secret", "set", "pw", "--state", state)
	if code != 0 {
		t.Fatalf("set: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, store.DefaultKeyFile)); !os.IsNotExist(err) {
		t.Errorf("a key file was made: %v", err)
	}
	withState(t, state, func(st *bolt.Store) {
		s, err := store.New(st, key)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(t.Context(), "pw"); err != nil || got.Reveal() != "from-env-key" {
			t.Errorf("Get: %v", err)
		}
	})
	t.Setenv(store.KeyEnv, "not base64 of a key")
	code, _, errs = cliIn(t, strings.NewReader("v"), "secret", "set", "pw2", "--state", state)
	if code != exitUsage || !strings.Contains(errs, store.KeyEnv) || strings.Contains(errs, "not base64 of a key") {
		t.Errorf("bad env key: exit %d, %q", code, errs)
	}
}
