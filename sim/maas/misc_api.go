package maas

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Capabilities MAAS 2.x+ regions announce at /version/.
var Capabilities = []string{
	"networks-management", "static-ipaddresses", "ipv6-deployment-ubuntu", "devices-management",
	"storage-deployment-ubuntu", "network-deployment-ubuntu", "bridging-interface-ubuntu",
	"bridging-automatic-ubuntu", "authenticate-api",
}

func (s *Server) routesMisc() {
	s.routesAccount()
	s.routesZones()
	s.routesPools()
	s.routesDomainsAndKeys()
	s.handle("GET", "/events/", "query", (*Server).eventsQuery)
	s.routesTags()
}

// routesAccount: the version, the user, the API tokens and the config.
func (s *Server) routesAccount() {
	s.handle("GET", "/version/", "", func(s *Server, _ *request) (any, *apiError) {
		return map[string]any{"capabilities": Capabilities, "version": Version, "subversion": "",
			"resource_uri": uri("/version/")}, nil
	})
	s.handle("GET", "/users/", "whoami", func(s *Server, req *request) (any, *apiError) {
		return map[string]any{"username": req.user, "email": req.user + "@lab.invalid", "is_superuser": true,
			"is_local": true, "resource_uri": uri("/users/%s/", req.user)}, nil
	})
	s.handle("GET", "/users/", "", func(s *Server, req *request) (any, *apiError) {
		return []any{map[string]any{"username": s.opts.User, "email": s.opts.User + "@lab.invalid", "is_superuser": true,
			"is_local": true, "resource_uri": uri("/users/%s/", s.opts.User)}}, nil
	})
	s.handle("POST", "/account/", "list_authorisation_tokens", func(s *Server, req *request) (any, *apiError) {
		return []any{map[string]any{"name": "lab", "token": s.opts.APIKey.String()}}, nil
	})
	s.handle("GET", "/account/", "list_authorisation_tokens", func(s *Server, req *request) (any, *apiError) {
		return []any{map[string]any{"name": "lab", "token": s.opts.APIKey.String()}}, nil
	})
	s.handle("GET", "/maas/", "get_config", func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		name := req.form.get("name")
		v, ok := s.config[name]
		if !ok {
			return nil, badRequest("name", "%s is not a valid config setting (valid settings are: %s).", name, strings.Join(s.configNames(), ", "))
		}
		return v, nil
	})
	s.handle("POST", "/maas/", "set_config", func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		name := req.form.get("name")
		if _, ok := s.config[name]; !ok {
			return nil, badRequest("name", "%s is not a valid config setting.", name)
		}
		s.config[name] = req.form.get("value")
		return "OK", nil
	})
}

// routesZones: availability zones.
func (s *Server) routesZones() {
	zones := byName[zone]{what: "Zone", objs: func(s *Server) map[string]*zone { return s.zones }, render: (*Server).renderZone,
		build: func(s *Server, name string, f formValues) *zone {
			return &zone{ID: s.nextID(), Name: name, Description: f.get("description")}
		}}
	s.handle("GET", "/zones/", "", zones.list)
	s.handle("POST", "/zones/", "", zones.create)
	s.handle("GET", "/zones/{name}/", "", func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		z := s.zones[req.params["name"]]
		if z == nil {
			return nil, notFound("Zone")
		}
		return s.renderZone(z), nil
	})
	s.handle("DELETE", "/zones/{name}/", "", func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		name := req.params["name"]
		if name == "default" {
			return nil, errorf(http.StatusBadRequest, "This zone is the default zone, it cannot be deleted.")
		}
		if s.zones[name] == nil {
			return nil, notFound("Zone")
		}
		delete(s.zones, name)
		return nil, nil
	})
}

// routesPools: resource pools.
func (s *Server) routesPools() {
	pools := byName[pool]{what: "Resource pool", objs: func(s *Server) map[string]*pool { return s.pools }, render: (*Server).renderPool,
		build: func(s *Server, name string, f formValues) *pool {
			return &pool{ID: s.nextID(), Name: name, Description: f.get("description")}
		}}
	s.handle("GET", "/resourcepools/", "", pools.list)
	s.handle("POST", "/resourcepools/", "", pools.create)
	// A resource pool: /resourcepool/{id}/, by ID or name as MAAS takes it.
	withPool := func(fn func(s *Server, p *pool, req *request) (any, *apiError)) handler {
		return withFound("ResourcePool", func(s *Server, req *request) *pool {
			key := req.params["id"]
			if p := s.pools[key]; p != nil {
				return p
			}
			for _, p := range s.pools {
				if strconv.Itoa(p.ID) == key {
					return p
				}
			}
			return nil
		}, fn)
	}
	s.handle("GET", "/resourcepool/{id}/", "", withPool(func(s *Server, p *pool, _ *request) (any, *apiError) {
		return s.renderPool(p), nil
	}))
	s.handle("PUT", "/resourcepool/{id}/", "", withPool(func(s *Server, p *pool, req *request) (any, *apiError) {
		if req.form.has("description") {
			p.Description = req.form.get("description")
		}
		if n := req.form.get("name"); n != "" && n != p.Name {
			if s.pools[n] != nil {
				return nil, badRequest("name", "Resource pool with this Name already exists.")
			}
			for _, m := range s.machines {
				if m.Pool == p.Name {
					m.Pool = n
				}
			}
			delete(s.pools, p.Name)
			p.Name = n
			s.pools[n] = p
		}
		return s.renderPool(p), nil
	}))
	s.handle("DELETE", "/resourcepool/{id}/", "", withPool(func(s *Server, p *pool, _ *request) (any, *apiError) {
		if p.Name == "default" {
			return nil, errorf(http.StatusBadRequest, "This is the default pool, it cannot be deleted.")
		}
		for _, m := range s.machines {
			if m.Pool == p.Name {
				return nil, errorf(http.StatusBadRequest, "Pool has machines in it, it cannot be deleted.")
			}
		}
		delete(s.pools, p.Name)
		return nil, nil
	}))
}

// routesDomainsAndKeys: DNS domains, the rack controller and SSH keys.
func (s *Server) routesDomainsAndKeys() {
	domains := byName[domain]{what: "Domain", objs: func(s *Server) map[string]*domain { return s.domains }, render: (*Server).renderDomain,
		build: func(s *Server, name string, f formValues) *domain {
			return &domain{ID: s.nextID(), Name: name, Authoritative: f.get("authoritative") != "false"}
		}}
	s.handle("GET", "/domains/", "", domains.list)
	s.handle("POST", "/domains/", "", domains.create)
	// Boot resources: bootres_api.go.
	// Rack controllers.
	s.handle("GET", "/rackcontrollers/", "", func(s *Server, _ *request) (any, *apiError) {
		return []any{map[string]any{"system_id": s.rackID, "hostname": "lab-rack", "fqdn": "lab-rack." + s.opts.Domain,
			"node_type": 2, "node_type_name": "Rack controller", "version": Version, "status": StatusDeployed,
			"status_name": "Deployed", "resource_uri": uri("/rackcontrollers/%s/", s.rackID)}}, nil
	})
	// SSH keys.
	s.handle("GET", "/account/prefs/sshkeys/", "", func(s *Server, _ *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := []any{}
		for _, id := range sortedIntKeys(s.sshKeys) {
			k := s.sshKeys[id]
			out = append(out, map[string]any{"id": k.ID, "key": k.Key, "keysource": nil, "resource_uri": uri("/account/prefs/sshkeys/%d/", k.ID)})
		}
		return out, nil
	})
	s.handle("POST", "/account/prefs/sshkeys/", "", func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		key := req.form.get("key")
		if !strings.HasPrefix(key, "ssh-") && !strings.HasPrefix(key, "ecdsa-") {
			return nil, badRequest("key", "Invalid SSH public key: Key should contain 2 or more space separated parts (key type, base64-encoded key, optional comments), not 1)")
		}
		k := &sshKey{ID: s.nextID(), Key: key}
		s.sshKeys[k.ID] = k
		return map[string]any{"id": k.ID, "key": k.Key, "keysource": nil, "resource_uri": uri("/account/prefs/sshkeys/%d/", k.ID)}, nil
	})
}

// byName serves the listing and creation of the objects MAAS keeps by a
// unique name (zones, resource pools, domains, tags).
type byName[T any] struct {
	what   string // as MAAS names the kind in "<what> with this Name already exists."
	objs   func(*Server) map[string]*T
	render func(*Server, *T) map[string]any
	build  func(s *Server, name string, f formValues) *T // a new object from the form
}

// list answers every object, by name.
func (b byName[T]) list(s *Server, _ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs := b.objs(s)
	out := []any{}
	for _, n := range sortedKeys(objs) {
		out = append(out, b.render(s, objs[n]))
	}
	return out, nil
}

// create makes the object the form names, refusing a name in use.
func (b byName[T]) create(s *Server, req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := req.form.get("name")
	if name == "" {
		return nil, badRequest("name", "This field is required.")
	}
	objs := b.objs(s)
	if objs[name] != nil {
		return nil, badRequest("name", "%s with this Name already exists.", b.what)
	}
	o := b.build(s, name, req.form)
	objs[name] = o
	return b.render(s, o), nil
}

func (s *Server) configNames() []string {
	out := make([]string, 0, len(s.config))
	for k := range s.config {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedIntKeys[T any](m map[int]T) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Tags.
func (s *Server) renderTag(t *tag) map[string]any {
	return map[string]any{"name": t.Name, "comment": t.Comment, "definition": t.Definition, "kernel_opts": t.KernelOpts,
		"resource_uri": uri("/tags/%s/", t.Name)}
}

func (s *Server) routesTags() {
	s.handle("GET", "/tags/", "", (*Server).tagsList)
	tags := byName[tag]{what: "Tag", objs: func(s *Server) map[string]*tag { return s.tags }, render: (*Server).renderTag,
		build: func(s *Server, name string, f formValues) *tag {
			s.tagsJSON = nil // the listing changes
			return &tag{Name: name, Comment: f.get("comment"), Definition: f.get("definition"), KernelOpts: f.get("kernel_opts")}
		}}
	s.handle("POST", "/tags/", "", tags.create)
	withTag := func(fn func(s *Server, t *tag, req *request) (any, *apiError)) handler {
		return withFound("Tag", func(s *Server, req *request) *tag { return s.tags[req.params["name"]] }, fn)
	}
	s.handle("GET", "/tags/{name}/", "", withTag(func(s *Server, t *tag, _ *request) (any, *apiError) { return s.renderTag(t), nil }))
	s.handle("PUT", "/tags/{name}/", "", withTag((*Server).tagUpdate))
	s.handle("DELETE", "/tags/{name}/", "", withTag(func(s *Server, t *tag, _ *request) (any, *apiError) {
		s.tagsJSON = nil
		delete(s.tags, t.Name)
		for _, m := range s.machines {
			m.Tags = removeString(m.Tags, t.Name)
		}
		return nil, nil
	}))
	s.handle("GET", "/tags/{name}/", "machines", withTag(func(s *Server, t *tag, _ *request) (any, *apiError) {
		defer s.beginListing()()
		out := []any{}
		for _, m := range sortedMachines(s.machines) {
			if contains(m.Tags, t.Name) {
				out = append(out, s.renderMachine(m))
			}
		}
		return out, nil
	}))
	s.handle("POST", "/tags/{name}/", "update_nodes", withTag((*Server).tagUpdateNodes))
}

// tagsList is GET /tags/, its JSON kept until a tag is created, changed
// or deleted.
func (s *Server) tagsList(_ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tagsJSON != nil {
		return s.tagsJSON, nil
	}
	out := []any{}
	for _, n := range sortedKeys(s.tags) {
		out = append(out, s.renderTag(s.tags[n]))
	}
	b, err := appendJSON(nil, out)
	if err != nil {
		return out, nil
	}
	s.tagsJSON = b
	return s.tagsJSON, nil
}

// tagUpdate renames a tag (on its machines too) and sets its fields.
func (s *Server) tagUpdate(t *tag, req *request) (any, *apiError) {
	s.tagsJSON = nil
	if c := req.form.get("comment"); req.form.has("comment") {
		t.Comment = c
	}
	if d := req.form.get("definition"); req.form.has("definition") {
		t.Definition = d
	}
	if k := req.form.get("kernel_opts"); req.form.has("kernel_opts") {
		t.KernelOpts = k
	}
	if n := req.form.get("name"); n != "" && n != t.Name {
		if s.tags[n] != nil {
			return nil, badRequest("name", "Tag with this Name already exists.")
		}
		for _, m := range s.machines {
			for i, x := range m.Tags {
				if x == t.Name {
					m.Tags[i] = n
				}
			}
		}
		delete(s.tags, t.Name)
		t.Name = n
		s.tags[n] = t
	}
	return s.renderTag(t), nil
}

// tagUpdateNodes adds machines to a tag and removes them from it (a tag
// without a definition only).
func (s *Server) tagUpdateNodes(t *tag, req *request) (any, *apiError) {
	if t.Definition != "" {
		return nil, conflict("Cannot add or remove nodes of a tag with a definition.")
	}
	added, removed := 0, 0
	for _, k := range []string{"add", "remove"} {
		for _, id := range req.form[k] {
			if m := s.machines[id]; m != nil {
				s.touchParts(m, partNone) // its tag_names may change (listing.go)
			}
		}
	}
	for _, id := range req.form["add"] {
		if m := s.machines[id]; m != nil && !contains(m.Tags, t.Name) {
			m.Tags = append(m.Tags, t.Name)
			added++
		}
	}
	for _, id := range req.form["remove"] {
		if m := s.machines[id]; m != nil && contains(m.Tags, t.Name) {
			m.Tags = removeString(m.Tags, t.Name)
			removed++
		}
	}
	return map[string]int{"added": added, "removed": removed}, nil
}

func removeString(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
