package api

import (
	"reflect"
	"strings"
	"testing"
)

// secretNames are the parts of a field's JSON name that say it can hold
// a secret (a token, a password, a node's boot data that carries its
// token).
var secretNames = []string{"token", "secret", "password", "passphrase", "credential", "private", "user_data", "userdata",
	"bootdata", "boot_data", "bootstrap_env", "env", "key"}

// notSecret are fields whose names match secretNames but which never hold
// one, with the reason (reviewed: a new entry needs one too).
var notSecret = map[string]string{}

// secretFields are the paths of the fields of t (through structs,
// pointers, slices, arrays and maps) whose JSON names say they can hold
// a secret.
func secretFields(t reflect.Type, path string, seen map[reflect.Type]bool, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := path + "." + name
		if f.Anonymous {
			p = path
		}
		low := strings.ToLower(name)
		for _, s := range secretNames {
			if strings.Contains(low, s) && notSecret[t.Name()+"."+name] == "" && !f.Anonymous && holdsText(f.Type, map[reflect.Type]bool{}) {
				*out = append(*out, t.Name()+"."+name+" ("+p+")")
				break
			}
		}
		secretFields(f.Type, p, seen, out)
	}
}

// TestSecretAnswersFlagged (issue 33 re-audit): every mutating route
// whose answer has a field that can hold a secret is marked SecretAnswer
// in the route table, so the idempotency middleware never keeps its
// answer for a retry; a new route can't forget it. A route marked needs
// a reason: its answer must have such a field.
func TestSecretAnswersFlagged(t *testing.T) {
	s := &Server{}
	for _, r := range s.table() {
		var found []string
		if r.Response != nil {
			secretFields(reflect.TypeOf(r.Response), "", map[reflect.Type]bool{}, &found)
		}
		switch {
		case r.Mutating && r.Produces != "" && !r.SecretAnswer:
			t.Errorf("%s %s: its answer is not JSON (%s), so no field of it can be checked: mark it SecretAnswer unless it can't hold a secret", r.Method, r.Path, r.Produces)
		case !r.Mutating && r.SecretAnswer:
			t.Errorf("%s %s: marked SecretAnswer but not mutating (only mutating calls' answers are kept)", r.Method, r.Path)
		case r.Mutating && len(found) > 0 && !r.SecretAnswer:
			t.Errorf("%s %s: its answer can hold a secret (%s): mark it SecretAnswer in the route table, or list the field in notSecret with why not",
				r.Method, r.Path, strings.Join(found, ", "))
		case r.SecretAnswer && len(found) == 0 && r.Produces == "":
			t.Errorf("%s %s: marked SecretAnswer, but its answer has no field that can hold a secret", r.Method, r.Path)
		}
	}
}

// holdsText reports whether a value of t can hold text: a string, bytes,
// an interface, or a struct, pointer, slice, array or map with one (a
// struct of a flag and a time, say, can't hold a secret).
func holdsText(t reflect.Type, seen map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return t.Elem().Kind() == reflect.Uint8 || holdsText(t.Elem(), seen)
	case reflect.Map:
		return holdsText(t.Key(), seen) || holdsText(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return false
		}
		seen[t] = true
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Tag.Get("json") != "-" && holdsText(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
