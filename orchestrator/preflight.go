package orchestrator

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/secrets"
)

// Preflight, part 2: the plan checked. Each secret reference is resolved
// once with the engine's resolver (the one the introspection API renders
// templates with: secret "NAME" in a template is secret:NAME), its value
// dropped at once; each image and kernel is looked up once in what the
// provisioner reported (drivers.SiteInfo).

// finding is one thing missing, with the nodes that need it.
type finding struct {
	what  string // e.g. secret "kubeadm-join-token" is not set
	users string // e.g. boot action kubernetes-join on nodes a, b, … 6 more
	fix   string // the next step
	nodes []string
}

func (f finding) String() string { return f.what + " (needed by " + f.users + "): " + f.fix }

// short is the finding for one of its nodes.
func (f finding) short() string { return f.what + ": " + f.fix }

// checkPreflight checks a plan; findings block the task, warnings don't.
func (e *Engine) checkPreflight(p preflightPlan, info drivers.SiteInfo, checkImages bool) (findings []finding, warnings []string) {
	for _, b := range p.broken {
		findings = append(findings, finding{what: b, users: "the design", fix: "correct the template, apply the design and retry the task"})
	}
	for _, ref := range preflightKeys(p.secrets) {
		if _, err := e.secret(e.ctx, ref); err != nil {
			findings = append(findings, secretFinding(ref, err, p.secrets[ref]))
		}
	}
	for _, w := range p.dynamic {
		warnings = append(warnings, w+" calls secret with an argument that is not a constant string: preflight can't tell which secret it needs; "+
			"a missing one fails the node when it fetches its assets")
	}
	if !checkImages {
		return findings, warnings
	}
	if info.BootImages == nil {
		return findings, append(warnings, "the server driver does not list the provisioner's boot images: images and kernels not checked")
	}
	for _, image := range preflightKeys(p.images) {
		findings = append(findings, imageFindings(image, p.images[image], info)...)
	}
	return findings, warnings
}

// secretFinding says what is wrong with ref and how to fix it. It names
// the reference, never a value (the resolver's errors hold none).
func secretFinding(ref string, err error, sn *secretNeed) finding {
	f := finding{users: sn.describe(), nodes: sn.nodes()}
	sr, perr := design.ParseSecretRef(ref)
	notSet := errors.Is(err, secrets.ErrNotSet)
	switch {
	case perr != nil:
		f.what, f.fix = "a secret reference is malformed ("+perr.Error()+")", "correct the design, apply it and retry the task"
	case notSet && sr.Scheme == "secret":
		f.what = fmt.Sprintf("secret %q is not set", sr.Name)
		f.fix = fmt.Sprintf("set it with 'orchestrator secret set %s' (or the environment variable %s), then retry the task", strings.ToLower(sr.Name), secrets.EnvName(sr.Name))
	case notSet && sr.Scheme == "env":
		f.what, f.fix = fmt.Sprintf("environment variable %s is not set", sr.Name), "set it where the orchestrator runs, then retry the task"
	case notSet:
		f.what, f.fix = fmt.Sprintf("secret file %s does not exist", sr.Name), "create it (mode 0600, readable by the orchestrator), then retry the task"
	default:
		f.what, f.fix = fmt.Sprintf("%s can't be read: %v", ref, err), "fix what the error says, then retry the task"
	}
	return f
}

// describe: "boot action x on nodes a, b, … 6 more; the BMC password of nodes c".
func (sn *secretNeed) describe() string {
	parts := make([]string, len(sn.users))
	for i, u := range sn.users {
		joint := " on "
		if strings.HasPrefix(u.what, "the ") {
			joint = " of "
		}
		parts[i] = u.what + joint + nodeList(u.nodes)
	}
	return strings.Join(parts, "; ")
}

func (sn *secretNeed) nodes() []string {
	var out []string
	for _, u := range sn.users {
		out = append(out, u.nodes...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nodeList: "node a", "nodes a, b, … 6 more".
func nodeList(nodes []string) string {
	if len(nodes) == 1 {
		return "node " + nodes[0]
	}
	return "nodes " + strings.Join(limitList(slices.Clone(nodes), 2), ", ")
}

// imageFindings checks one image the design names, and its kernels,
// against the provisioner's boot images. An image named without its
// operating system ("jammy") is the provisioner's default OS's; no image
// is its default image. What the provisioner doesn't tell (no default,
// an image without a kernel list) is not checked.
func imageFindings(image string, im *imageNeed, info drivers.SiteInfo) []finding {
	full, known := qualifyImage(image, info)
	if !known {
		return nil
	}
	label := fmt.Sprintf("image %q", full)
	if image != full {
		label = fmt.Sprintf("image %q (%s)", image, full)
	}
	if !slices.Contains(info.BootImages, full) {
		return []finding{{what: label + " is not among the provisioner's boot images (" + orDefault(strings.Join(info.BootImages, ", "), "none") + ")",
			users: nodeList(im.nodes), nodes: im.nodes,
			fix: "import it into the provisioner (MAAS: Images, or `maas $PROFILE boot-source-selections create`), or give the nodes another platform.image; then retry the task"}}
	}
	kernels, listed := info.Kernels[full]
	if !listed {
		return nil
	}
	var out []finding
	for _, k := range preflightKeys(im.kernels) {
		if slices.Contains(kernels, k) {
			continue
		}
		nodes := im.kernels[k]
		out = append(out, finding{what: fmt.Sprintf("kernel %q is not among the provisioner's kernels for %s (%s)", k, full, orDefault(strings.Join(kernels, ", "), "none")),
			users: nodeList(nodes), nodes: nodes,
			fix: "import it into the provisioner (MAAS syncs the kernels of the releases its boot source selections name), or give the nodes another platform.kernel; then retry the task"})
	}
	return out
}

// qualifyImage returns the provisioner's name of an image the design
// names; known is false when the provisioner didn't say enough to tell.
func qualifyImage(image string, info drivers.SiteInfo) (string, bool) {
	switch {
	case image == "":
		return info.DefaultImage, info.DefaultImage != ""
	case strings.Contains(image, "/"):
		return image, true
	case info.DefaultOS != "":
		return info.DefaultOS + "/" + image, true
	}
	// No default OS: the one image of that series, if there is one.
	var match []string
	for _, b := range info.BootImages {
		if _, series, _ := strings.Cut(b, "/"); series == image {
			match = append(match, b)
		}
	}
	if len(match) == 1 {
		return match[0], true
	}
	return image, len(match) == 0
}
