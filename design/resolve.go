package design

import (
	"reflect"
	"strings"
)

// MaxChainDepth is the longest host profile chain allowed.
const MaxChainDepth = 16

// chainOf walks the parents of a host profile up to its root ancestor and
// returns the chain root first. A missing parent, a cycle or a chain deeper
// than MaxChainDepth is reported and the chain cut there.
func (b *builder) chainOf(name string) []string {
	profiles := b.objs[KindHostProfile]
	var chain []string
	seen := map[string]bool{}
	for cur := name; cur != ""; {
		o := profiles[cur]
		if seen[cur] {
			b.r.errorf(RuleInheritanceCycle, KindHostProfile, name, parentPos(profiles[name]),
				"HostProfile chain %s -> %s never ends: break the cycle by changing one parent", strings.Join(chain, " -> "), cur)
			break
		}
		seen[cur] = true
		chain = append(chain, cur)
		if len(chain) > MaxChainDepth {
			b.r.errorf(RuleInheritanceCycle, KindHostProfile, name, parentPos(profiles[name]),
				"HostProfile chain %s is deeper than %d profiles: flatten it", strings.Join(chain, " -> "), MaxChainDepth)
			break
		}
		parent := o.spec().Text("parent")
		if parent != "" && profiles[parent] == nil {
			b.r.errorf(RuleReference, KindHostProfile, cur, parentPos(o),
				"parent HostProfile %q does not exist (chain %s)", parent, strings.Join(append(chain, parent), " -> "))
			break
		}
		cur = parent
	}
	return reverse(chain)
}

func parentPos(o *object) Pos {
	if p := o.spec().Get("parent"); p != nil {
		return p.Pos
	}
	return o.pos
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

// hostProfiles resolves every host profile along its chain.
func (b *builder) hostProfiles() {
	objs := b.objs[KindHostProfile]
	b.resolved = map[string]*Value{}
	for _, name := range sortedNames(objs) {
		o := objs[name]
		d := decoder{kind: KindHostProfile, name: name, sink: &b.r.scratch}
		d.decodeInto(o.spec(), &HostProfileSpec{}, "spec")
		b.r.flushScratch()
	}
	b.chains = map[string][]string{}
	for _, name := range sortedNames(objs) {
		doc := b.nodeBase
		b.chains[name] = b.chainOf(name)
		for _, p := range b.chains[name] {
			doc = Resolve(doc, objs[p].doc)
		}
		b.resolved[name] = doc
		x := &HostProfile{}
		decodeMeta(doc, objs[name], &x.Metadata)
		// Silently: a profile may leave required fields to its children;
		// they are checked on the nodes that inherit it.
		d := decoder{kind: KindHostProfile, name: name}
		d.decodeInto(doc.Get("spec"), &x.Spec, "spec")
		b.d.HostProfiles[name] = x
	}
}

// inheritable returns the resolved host profile as a node's parent: the
// profile's own parent link removed.
func (b *builder) inheritable(name string) *Value {
	doc := b.resolved[name]
	spec := doc.Get("spec")
	if spec.Get("parent") == nil {
		return doc
	}
	out := make([]Entry, len(doc.Entries))
	copy(out, doc.Entries)
	for i := range out {
		if out[i].Key == "spec" {
			out[i].Value = spec.without("parent")
		}
	}
	v := NewMap(doc.Pos, out)
	b.resolved[name] = v // memoise: later calls find no parent key
	return v
}

// nodes resolves every node over its host profile and attaches its hardware.
func (b *builder) nodes() {
	objs := b.objs[KindNode]
	defaultProfile := b.d.Site.Spec.Defaults.HostProfile
	memo := map[memoKey]reflect.Value{}
	for _, name := range sortedNames(objs) {
		o := objs[name]
		d := decoder{kind: KindNode, name: name, sink: &b.r.scratch}
		d.decodeInto(o.spec(), &NodeSpec{}, "spec")
		b.r.flushScratch()

		base := b.nodeBase
		hp := o.spec().Text("hostProfile")
		if hp == "" {
			hp = defaultProfile
		}
		x := &Node{}
		switch {
		case hp == "":
			b.r.errorf(RuleSchema, KindNode, name, o.pos, "spec.hostProfile is required (or set defaults.hostProfile in the Site)")
		case b.resolved[hp] == nil:
			pos := o.pos
			if v := o.spec().Get("hostProfile"); v != nil {
				pos = v.Pos
			}
			b.r.errorf(RuleReference, KindNode, name, pos, "HostProfile %q does not exist", hp)
		default:
			base = b.inheritable(hp)
			x.Chain = b.chains[hp]
		}
		doc := Resolve(base, o.doc)
		decodeMeta(doc, o, &x.Metadata)
		d = decoder{kind: KindNode, name: name, sink: &b.r.scratch, required: true, memo: memo}
		d.decodeInto(doc.Get("spec"), &x.Spec, "spec")
		b.r.flushScratch()
		x.Spec.HostProfile = hp
		if len(x.Spec.Addressing) == 0 {
			b.r.errorf(RuleSchema, KindNode, name, o.pos, "spec.addressing needs at least one entry ({network: NAME, address: IP|dhcp})")
		}
		if hw := b.d.HardwareProfiles[x.Spec.HardwareProfile]; hw != nil {
			x.Spec.Hardware = &hw.Spec
		}
		b.d.Nodes[name] = x
	}
}
