package design

import (
	"fmt"
	"regexp"
	"strings"
)

// SecretRef is a reference to a secret: secret:NAME (the orchestrator's
// encrypted store), env:VAR or file:/path.
type SecretRef struct {
	Scheme string // "secret", "env" or "file"
	Name   string
}

func (s SecretRef) String() string { return s.Scheme + ":" + s.Name }

var (
	secretNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ParseSecretRef checks a secret reference's form. Its error never repeats
// the input, which may be a clear-text secret written by mistake.
func ParseSecretRef(s string) (SecretRef, error) {
	scheme, name, ok := strings.Cut(s, ":")
	if !ok {
		return SecretRef{}, fmt.Errorf("not a secret reference; write secret:NAME, env:VAR or file:/path, never the secret itself")
	}
	ref := SecretRef{Scheme: scheme, Name: name}
	switch scheme {
	case "secret":
		if secretNameRE.MatchString(name) {
			return ref, nil
		}
		return SecretRef{}, fmt.Errorf("secret:NAME needs a NAME of letters, digits, '.', '_' or '-'")
	case "env":
		if envNameRE.MatchString(name) {
			return ref, nil
		}
		return SecretRef{}, fmt.Errorf("env:VAR needs an environment variable name")
	case "file":
		if strings.HasPrefix(name, "/") && !strings.ContainsRune(name, 0) {
			return ref, nil
		}
		return SecretRef{}, fmt.Errorf("file:/path needs an absolute path")
	}
	return SecretRef{}, fmt.Errorf("not a secret reference (unknown scheme); write secret:NAME, env:VAR or file:/path, never the secret itself")
}
