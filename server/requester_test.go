package server

import (
	"errors"
	"os/user"
	"strings"
	"testing"
)

// TestRequesterIsTheOSUser: a local task records the OS account, then
// $USER or $LOGNAME, then the uid; never "cli:unknown".
func TestRequesterIsTheOSUser(t *testing.T) {
	noUser := func() (*user.User, error) { return nil, errors.New("no passwd entry") }
	asUser := func(n string) func() (*user.User, error) {
		return func() (*user.User, error) { return &user.User{Username: n}, nil }
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		name    string
		current func() (*user.User, error)
		env     map[string]string
		want    string
	}{
		{"account", asUser("alice"), map[string]string{"USER": "mallory"}, "cli:alice"},
		{"USER", noUser, map[string]string{"USER": "bob", "LOGNAME": "carol"}, "cli:bob"},
		{"LOGNAME", noUser, map[string]string{"LOGNAME": "carol"}, "cli:carol"},
		{"empty account name", asUser(" "), map[string]string{"USER": "dave"}, "cli:dave"},
		{"uid", noUser, nil, "cli:uid:4242"},
		{"control characters", asUser("eve\n\x1b[31mroot"), nil, "cli:eve??[31mroot"},
		{"long", asUser(strings.Repeat("x", 300)), nil, "cli:" + strings.Repeat("x", maxRequesterName)},
	} {
		if got := osUser(c.current, env(c.env), 4242); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// This process's: the real account, not "cli:unknown".
	got := LocalRequester()
	if got == "cli:unknown" || !strings.HasPrefix(got, "cli:") || len(got) <= len("cli:") {
		t.Errorf("LocalRequester() = %q", got)
	}
	if u, err := user.Current(); err == nil && u.Username != "" && got != "cli:"+u.Username {
		t.Errorf("LocalRequester() = %q, want cli:%s", got, u.Username)
	}
}
