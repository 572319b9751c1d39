package design

import (
	"fmt"
	"path"
	"text/template"
)

// bootActions checks every boot action and returns the nodes they target.
func (v *validator) bootActions() map[string]bool {
	targeted := map[string]bool{}
	for _, an := range sortedNames(v.d.BootActions) {
		a := v.d.BootActions[an]
		s := &a.Spec
		for i := range s.Assets {
			v.asset(an, i, &s.Assets[i])
		}
		if f := s.NodeFilter; f != nil {
			for _, n := range f.Names {
				if v.d.Nodes[n] == nil {
					v.r.warnf(RuleReference, KindBootAction, an, f.Pos, "nodeFilter names node %q, which does not exist", n)
				}
			}
		}
		for name, n := range v.d.Nodes {
			if !targeted[name] && s.NodeFilter.Matches(n) {
				targeted[name] = true
			}
		}
	}
	return targeted
}

// asset checks asset i of boot action an: data or a template that parses,
// a clean absolute path, octal permissions.
func (v *validator) asset(an string, i int, as *Asset) {
	what := fmt.Sprintf("assets[%d]", i)
	switch {
	case as.Data == "" && as.Template == "":
		v.r.errorf(RuleBootAction, KindBootAction, an, as.Pos, "%s has neither data nor template; give it one", what)
	case as.Data != "" && as.Template != "":
		v.r.errorf(RuleBootAction, KindBootAction, an, as.Pos, "%s has both data and template; keep one", what)
	}
	if as.Template != "" {
		if _, err := template.New(what).Option("missingkey=error").Funcs(TemplateFuncs(nil)).Parse(as.Template); err != nil {
			v.r.errorf(RuleBootAction, KindBootAction, an, orPos(as.TemplatePos, as.Pos), "%s: template does not parse: %v", what, err)
		}
	}
	if as.Path != "" && (!path.IsAbs(as.Path) || path.Clean(as.Path) != as.Path) {
		v.r.errorf(RuleBootAction, KindBootAction, an, as.Pos, "%s: path %q must be absolute and clean, like /etc/motd", what, as.Path)
	}
	if as.Permissions != "" && !permsRE.MatchString(as.Permissions) {
		v.r.errorf(RuleBootAction, KindBootAction, an, as.Pos, "%s: permissions %q must be octal, like \"0644\"", what, as.Permissions)
	}
}

// TemplateFuncs are the functions a boot action template may call:
// `secret "NAME"` is the value of the secret NAME (resolved when the
// introspection API renders the asset for a node; validation only checks
// the template parses). A nil resolve gives a function that fails.
func TemplateFuncs(resolve func(name string) (string, error)) template.FuncMap {
	if resolve == nil {
		resolve = func(name string) (string, error) { return "", fmt.Errorf("secret %q: no secret store here", name) }
	}
	return template.FuncMap{"secret": resolve}
}
