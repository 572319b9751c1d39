package maas

import (
	"net/http"
	"net/url"
	"testing"
)

// TestNamedObjects: zones, resource pools, domains and tags are created by
// a unique name, listed by name, and a second object of a name is the
// form's error, worded as MAAS words it.
func TestNamedObjects(t *testing.T) {
	e := newNetEnv(t)
	for _, c := range []struct {
		path, what string
		form       url.Values
		check      func(obj map[string]any) bool
	}{
		{"/zones/", "Zone", url.Values{"description": {"rack 7"}}, func(o map[string]any) bool { return o["description"] == "rack 7" }},
		{"/resourcepools/", "Resource pool", url.Values{"description": {"gpu"}}, func(o map[string]any) bool { return o["description"] == "gpu" }},
		{"/domains/", "Domain", url.Values{"authoritative": {"false"}}, func(o map[string]any) bool { return o["authoritative"] == false }},
		{"/tags/", "Tag", url.Values{"comment": {"fast"}}, func(o map[string]any) bool { return o["comment"] == "fast" }},
	} {
		before := len(e.list("GET", c.path, nil))
		e.fieldErr("POST", c.path, url.Values{}, "name", "This field is required.")
		for _, name := range []string{"zz-new", "aa-new"} {
			form := url.Values{"name": {name}}
			for k, v := range c.form {
				form[k] = v
			}
			if o := e.obj(http.StatusOK, "POST", c.path, form); o["name"] != name || !c.check(o) {
				t.Errorf("POST %s %v: %v", c.path, form, o)
			}
		}
		e.fieldErr("POST", c.path, url.Values{"name": {"zz-new"}}, "name", c.what+" with this Name already exists.")
		got := e.list("GET", c.path, nil)
		if len(got) != before+2 {
			t.Fatalf("GET %s: %d objects, want %d", c.path, len(got), before+2)
		}
		var names []string
		for _, o := range got {
			names = append(names, o.(map[string]any)["name"].(string))
		}
		for i := 1; i < len(names); i++ {
			if names[i-1] >= names[i] {
				t.Errorf("GET %s: names %v not in order", c.path, names)
			}
		}
	}
}
