package orchestrator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Preflight, part 1: the plan. Before a task touches any machine, what
// its nodes need from outside the design is gathered from the design
// alone (no I/O): the secret references (BMC passwords, the secrets boot
// action templates call) and the OS images and kernels, each with the
// nodes that need it. Part 2 (preflight.go) checks each secret and each
// image once, however many nodes share it.

// preflightPlan is what a set of nodes needs.
type preflightPlan struct {
	nodes   int
	secrets map[string]*secretNeed // by reference (secret:name in lower case)
	images  map[string]*imageNeed  // by the image the design names ("" = the provisioner's default)
	// dynamic: templates calling secret with a non-constant argument,
	// which only rendering for a node resolves (warnings).
	dynamic []string
	// broken: templates that do not parse (validation refuses them;
	// a stored revision should never have one).
	broken []string
}

// secretNeed lists who needs one secret: "boot action X" or "the BMC
// password", each with its nodes, in the order met.
type secretNeed struct {
	users []secretUser
}

type secretUser struct {
	what  string
	nodes []string
}

// imageNeed lists the nodes of one image, and by kernel those naming one.
type imageNeed struct {
	nodes   []string
	kernels map[string][]string
}

// preflightScope says what an action needs checked before it starts:
// any checks at all, and the boot data (boot action secrets, images and
// kernels) besides the BMC passwords.
func preflightScope(a record.Action) (check, bootData bool) {
	switch a {
	case record.ActionDeployNodes, record.ActionRedeployNodes, record.ActionVerifySite:
		return true, true
	case record.ActionPrepareNodes: // commissioning: the BMC only
		return true, false
	}
	return false, false
}

// planPreflight gathers what the named nodes of d need. overridden, when
// set, names the nodes whose BMC takes a power-credential override
// instead of the design's password, which they do not need.
func planPreflight(d *design.Design, nodes []string, bootData bool, overridden func(node string) bool) preflightPlan {
	p := preflightPlan{nodes: len(nodes), secrets: map[string]*secretNeed{}, images: map[string]*imageNeed{}}
	driver := d.SiteOOBDriver()
	bmc := map[string][]string{}
	for _, name := range nodes {
		n := d.Nodes[name]
		if n == nil {
			continue
		}
		if ref := n.OOB(driver).PasswordRef; ref != "" && (overridden == nil || !overridden(name)) {
			bmc[ref] = append(bmc[ref], name)
		}
		if bootData && declaredImage(d, n) == nil { // an Image document is synced by the images stage (images_stage.go)
			p.addImage(name, n.Spec.Platform)
		}
	}
	for _, ref := range preflightKeys(bmc) {
		p.need(ref, "the BMC password", bmc[ref])
	}
	if bootData {
		p.planBootActions(d, nodes)
	}
	return p
}

func (p *preflightPlan) addImage(node string, pf design.Platform) {
	im := p.images[pf.Image]
	if im == nil {
		im = &imageNeed{kernels: map[string][]string{}}
		p.images[pf.Image] = im
	}
	im.nodes = append(im.nodes, node)
	if pf.Kernel != "" {
		im.kernels[pf.Kernel] = append(im.kernels[pf.Kernel], node)
	}
}

// planBootActions reads each boot action's templates once; only the
// actions that call secret are matched against the nodes.
func (p *preflightPlan) planBootActions(d *design.Design, nodes []string) {
	for _, an := range preflightKeys(d.BootActions) {
		ba := d.BootActions[an]
		var names []string
		for i, as := range ba.Spec.Assets {
			if as.Template == "" {
				continue
			}
			what := fmt.Sprintf("boot action %s, assets[%d] (%s)", an, i, as.Path)
			got, dynamic, err := design.TemplateSecrets(what, as.Template)
			switch {
			case err != nil:
				p.broken = append(p.broken, fmt.Sprintf("%s: the template does not parse: %v", what, err))
			case dynamic:
				p.dynamic = append(p.dynamic, what)
			}
			for _, n := range got {
				names = append(names, strings.ToLower(n)) // see need
			}
		}
		if len(names) == 0 {
			continue
		}
		var targets []string
		for _, name := range nodes {
			if n := d.Nodes[name]; n != nil && ba.Spec.NodeFilter.Matches(n) {
				targets = append(targets, name)
			}
		}
		if len(targets) == 0 {
			continue
		}
		slices.Sort(names)
		for _, s := range slices.Compact(names) {
			p.need("secret:"+s, "boot action "+an, targets)
		}
	}
}

// need records that nodes need ref for what. secret:NAME references are
// keyed in lower case: the store holds names in lower case and the
// environment variable is upper case, so case never tells two apart.
func (p *preflightPlan) need(ref, what string, nodes []string) {
	if name, ok := strings.CutPrefix(ref, "secret:"); ok {
		ref = "secret:" + strings.ToLower(name)
	}
	sn := p.secrets[ref]
	if sn == nil {
		sn = &secretNeed{}
		p.secrets[ref] = sn
	}
	sn.users = append(sn.users, secretUser{what: what, nodes: nodes})
}

func preflightKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
