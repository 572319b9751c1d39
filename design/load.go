package design

import (
	"maps"
	"slices"
	"strings"
)

// Source is one YAML document as a consumer read it.
type Source struct {
	// Root is the index of the design root the document came from. Later
	// roots are layers over earlier ones.
	Root int
	// Doc is the whole document: apiVersion, kind, metadata and spec.
	Doc *Value
	// Pos is where the document starts.
	Pos Pos
}

// object is one kind/name after layering, before typed decoding.
type object struct {
	kind, name string
	doc        *Value // layered document
	pos        Pos    // first definition
}

func (o *object) spec() *Value { return o.doc.Get("spec") }

var envelopeKeys = []string{"apiVersion", "kind", "metadata", "spec"}

// readEnvelope checks a document's apiVersion, kind and metadata and
// returns its kind and name, or ok=false with findings filed.
func readEnvelope(r *report, s Source) (kind, name string, ok bool) {
	doc := s.Doc
	if doc == nil || doc.Kind != MapValue {
		r.errorf(RuleSchema, "", "", s.Pos, "a document must be a mapping with apiVersion, kind, metadata and spec")
		return "", "", false
	}
	kind = doc.Text("kind")
	name = doc.Get("metadata").Text("name")
	ok = true
	for _, e := range doc.Entries {
		if !contains(envelopeKeys, e.Key) {
			r.errorf(RuleSchema, kind, name, e.KeyPos, "unknown top-level field %q (known fields: apiVersion, kind, metadata, spec)", e.Key)
		}
	}
	switch av := doc.Get("apiVersion"); {
	case av == nil:
		r.errorf(RuleSchema, kind, name, s.Pos, "apiVersion is required; set it to %q", APIVersion)
		ok = false
	case av.Str != APIVersion:
		r.errorf(RuleSchema, kind, name, av.Pos, "unknown apiVersion %q; this build reads %q", av.Str, APIVersion)
		ok = false
	}
	switch k := doc.Get("kind"); {
	case k == nil:
		r.errorf(RuleSchema, "", name, s.Pos, "kind is required (one of %s)", strings.Join(Kinds, ", "))
		return kind, name, false
	case !contains(Kinds, k.Str):
		r.errorf(RuleSchema, k.Str, name, k.Pos, "unknown kind %q (known kinds: %s)", k.Str, strings.Join(Kinds, ", "))
		return kind, name, false
	}
	meta := doc.Get("metadata")
	if meta == nil || meta.Kind != MapValue {
		r.errorf(RuleSchema, kind, "", s.Pos, "metadata with a name is required")
		return kind, name, false
	}
	var m ObjectMeta
	d := decoder{kind: kind, name: name, sink: &r.scratch}
	d.decodeInto(meta, &m, "metadata")
	r.flushScratch()
	switch n := meta.Get("name"); {
	case n == nil || n.Kind != ScalarValue || n.Str == "":
		r.errorf(RuleSchema, kind, "", meta.Pos, "metadata.name is required")
		return kind, name, false
	case kind != KindNode && !isDNSLabel(n.Str):
		r.errorf(RuleSchema, kind, name, n.Pos, "name %q is not a DNS-1123 label: use 1 to 63 characters a-z, 0-9 and '-', starting and ending with a letter or digit", n.Str)
	}
	if sp := doc.Get("spec"); sp != nil && sp.Kind != MapValue && sp.Kind != NullValue {
		r.errorf(RuleSchema, kind, name, sp.Pos, "spec must be a mapping, not %s", describe(sp))
		return kind, name, false
	}
	return kind, name, ok
}

// layer groups sources by kind/name and composes the layers of each.
func layer(r *report, sources []Source) map[string]map[string]*object {
	objs := map[string]map[string]*object{}
	for _, k := range Kinds {
		objs[k] = map[string]*object{}
	}
	roots := map[*object]int{}
	for _, s := range sources {
		kind, name, ok := readEnvelope(r, s)
		r.docs[s.Pos.File] = append(r.docs[s.Pos.File], docStart{line: s.Pos.Line, kind: kind, name: name})
		if !ok {
			continue
		}
		prev := objs[kind][name]
		if prev == nil {
			r.objPos[kind+"/"+name] = s.Pos
			o := &object{kind: kind, name: name, doc: s.Doc, pos: s.Pos}
			objs[kind][name] = o
			roots[o] = s.Root
			continue
		}
		if roots[prev] == s.Root {
			r.errorf(RuleSchema, kind, name, s.Pos, "duplicate %s %q: already defined at %s; rename one or remove it", kind, name, prev.pos)
			continue
		}
		prev.doc = Overlay(prev.doc, s.Doc)
		roots[prev] = s.Root
	}
	return objs
}

// sortedNames returns the keys of m in order.
func sortedNames[T any](m map[string]T) []string {
	return slices.Sorted(maps.Keys(m))
}

// decodeObject decodes a layered object (with defaults beneath it) into its
// metadata and spec, reporting schema problems.
func decodeObject(r *report, o *object, defaults *Value, meta *ObjectMeta, spec any) {
	doc := Resolve(defaults, o.doc)
	decodeMeta(doc, o, meta)
	d := decoder{kind: o.kind, name: o.name, sink: &r.scratch}
	d.decodeInto(doc.Get("spec"), spec, "spec")
	d.required = true
	d.decodeInto(doc.Get("spec"), spec, "spec")
	r.flushScratch()
}

func decodeMeta(doc *Value, o *object, meta *ObjectMeta) {
	d := decoder{kind: o.kind, name: o.name}
	d.decodeInto(doc.Get("metadata"), meta, "metadata")
	meta.Pos = o.pos
}

// Build layers, resolves, decodes and validates sources. The Design is
// returned even when there are errors, as complete as the errors allow; it
// must not be used for anything but reporting when Findings has errors.
func Build(sources []Source) (*Design, Findings) {
	r := newReport()
	objs := layer(r, sources)
	d := &Design{
		Networks:         map[string]*Network{},
		NetworkLinks:     map[string]*NetworkLink{},
		HardwareProfiles: map[string]*HardwareProfile{},
		HostProfiles:     map[string]*HostProfile{},
		Nodes:            map[string]*Node{},
		BootActions:      map[string]*BootAction{},
		Images:           map[string]*Image{},
	}
	b := &builder{r: r, objs: objs, d: d}
	b.site()
	decodeKind(r, objs[KindNetwork], networkDefaults, d.Networks, func(x *Network) (*ObjectMeta, any) { return &x.Metadata, &x.Spec })
	decodeKind(r, objs[KindNetworkLink], linkDefaults, d.NetworkLinks, func(x *NetworkLink) (*ObjectMeta, any) { return &x.Metadata, &x.Spec })
	decodeKind(r, objs[KindHardwareProfile], hardwareDefaults, d.HardwareProfiles, func(x *HardwareProfile) (*ObjectMeta, any) { return &x.Metadata, &x.Spec })
	decodeKind(r, objs[KindBootAction], bootActionDefaults, d.BootActions, func(x *BootAction) (*ObjectMeta, any) { return &x.Metadata, &x.Spec })
	decodeKind(r, objs[KindImage], imageDefaults, d.Images, func(x *Image) (*ObjectMeta, any) { return &x.Metadata, &x.Spec })
	b.hostProfiles()
	b.nodes()
	d.nameSites()
	validate(r, d)
	return d, r.findings()
}

// decodeKind decodes every object of one kind into the design's map.
func decodeKind[T any](r *report, objs map[string]*object, defaults *Value, into map[string]*T, parts func(*T) (*ObjectMeta, any)) {
	for _, n := range sortedNames(objs) {
		x := new(T)
		meta, spec := parts(x)
		decodeObject(r, objs[n], defaults, meta, spec)
		into[n] = x
	}
}

type builder struct {
	r    *report
	objs map[string]map[string]*object
	d    *Design
	// nodeBase is the tree every host profile chain starts from (site defaults).
	nodeBase *Value
	resolved map[string]*Value   // host profile name -> resolved document
	chains   map[string][]string // host profile name -> chain, root first
}

func (b *builder) site() {
	sites := b.objs[KindSite]
	names := sortedNames(sites)
	if len(names) == 0 {
		b.r.errorf(RuleSchema, KindSite, "", Pos{}, "the design has no Site document; add exactly one (kind: Site)")
	}
	s := &Site{}
	if len(names) > 0 {
		o := sites[names[0]]
		decodeObject(b.r, o, siteDefaults, &s.Metadata, &s.Spec)
		b.nodeBase = nodeDefaults(o.spec())
	} else {
		decodeObject(b.r, &object{kind: KindSite, doc: NewMap(Pos{}, nil)}, siteDefaults, &s.Metadata, &s.Spec)
	}
	b.d.Site = s
	if len(names) < 2 {
		return
	}
	b.d.Sites = map[string]*Site{names[0]: s} // several Sites: sites.go
	for _, n := range names[1:] {
		other := &Site{}
		decodeObject(b.r, sites[n], siteDefaults, &other.Metadata, &other.Spec)
		b.d.Sites[n] = other
	}
}
