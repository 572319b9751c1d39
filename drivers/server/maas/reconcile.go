package maas

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	segjson "github.com/segmentio/encoding/json"

	"github.com/slipway-dev/slipway/drivers"
)

// userTags are a machine's tags without the driver's kernel parameter
// and claim tags, sorted (nil when none).
func userTags(names []string) []string {
	var out []string
	for _, t := range names {
		if !strings.HasPrefix(t, KernelTagPrefix) && !strings.HasPrefix(t, ClaimTagPrefix) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// kernelOptions fills the KernelOptions of the deployed machines among
// out (src[i] is MAAS's machine of out[i], nil when there is none) from
// their kernel tags' kernel_opts: one read of the tag list (cached), and
// none when no deployed machine has a kernel tag. Reconciliation compares
// them with the design; the status polls of machines on their way to
// deployment do not pay for it.
func (d *Driver) kernelOptions(ctx context.Context, out []drivers.Machine, src []*mMachine) error {
	need := false
	for i, m := range src {
		if m != nil && out[i].State == "Deployed" && slices.ContainsFunc(m.TagNames, isKernelTag) {
			need = true
			break
		}
	}
	if !need {
		return nil
	}
	var tags []mTag
	if err := d.c.cache.list(ctx, d.c, "tags/", "", &tags); err != nil {
		return err
	}
	opts := make(map[string]string, len(tags))
	for _, t := range tags {
		if isKernelTag(t.Name) {
			opts[t.Name] = t.KernelOpts
		}
	}
	for i, m := range src {
		if m == nil || out[i].State != "Deployed" {
			continue
		}
		var words []string
		for _, t := range m.TagNames {
			if isKernelTag(t) && opts[t] != "" {
				words = append(words, strings.Fields(opts[t])...)
			}
		}
		out[i].KernelOptions = strings.Join(words, " ")
	}
	return nil
}

func isKernelTag(t string) bool { return strings.HasPrefix(t, KernelTagPrefix) }

// Repairable drift: what RepairMachine puts back.
const (
	RepairHostname      = "hostname"
	RepairTags          = "tags"
	RepairKernelOptions = "kernel-options"
	RepairPower         = "power"
	RepairOwner         = "owner"
)

// RepairMachine puts back, on a machine that may be deployed, what the
// node's design says and someone changed in MAAS behind the
// orchestrator's back: its hostname, its tags (the design's that are
// missing are added), its kernel parameters tag, its power (on) and this
// orchestrator's ownership marker (owner data). Each part is asked for by
// name (RepairHostname...). It refuses a machine that is not deployed, or
// that is allocated to another agent.
func (d *Driver) RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error) {
	if n.MachineID == "" {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: repair of node %s: the node has no machine", n.Name)
	}
	m, err := d.fetchMachine(ctx, n.MachineID) // what MAAS has now, not a cached read
	if err != nil {
		return drivers.Result{}, err
	}
	if m.StatusName != "Deployed" {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: repair of node %s: machine %s is %s, not Deployed; a task puts it back (deploy or redeploy the node)",
			n.Name, m.SystemID, m.StatusName)
	}
	var done cfgChanges
	for _, part := range parts {
		if err := d.repairPart(ctx, m, n, part, &done); err != nil {
			return drivers.Result{}, err
		}
	}
	return done.result("repair", m.SystemID), nil
}

// repairPart repairs one part of a deployed machine (RepairOwner...).
func (d *Driver) repairPart(ctx context.Context, m *mMachine, n drivers.Node, part string, done *cfgChanges) error {
	switch part {
	case RepairOwner:
		return d.repairOwner(ctx, m, n, done)
	case RepairHostname:
		if n.Hostname == "" || m.Hostname == n.Hostname {
			return nil
		}
		if err := d.c.call(ctx, http.MethodPut, "machines/"+url.PathEscape(m.SystemID)+"/", "", url.Values{"hostname": {n.Hostname}}, nil); err != nil {
			return err
		}
		done.add("hostname %s (was %s)", n.Hostname, m.Hostname)
	case RepairTags:
		return d.repairTags(ctx, m, n, done)
	case RepairKernelOptions:
		return d.repairKernelTag(ctx, m, n, done)
	case RepairPower:
		if m.PowerState == "on" {
			return nil
		}
		if _, err := d.machineOp(ctx, m.SystemID, "power_on", nil); err != nil {
			return err
		}
		done.add("powered on (was %s)", m.PowerState)
	default:
		return drivers.Errorf(drivers.Permanent, "maas: repair of %q: the driver repairs %s, %s, %s, %s and %s",
			part, RepairHostname, RepairTags, RepairKernelOptions, RepairPower, RepairOwner)
	}
	return nil
}

// repairOwner puts this orchestrator's marker for the node back on a
// machine that is ours; a machine marked for another node of this site
// is refused.
func (d *Driver) repairOwner(ctx context.Context, m *mMachine, n drivers.Node, done *cfgChanges) error {
	if m.OwnerData[OwnerDataNode] == n.Name && m.OwnerData[OwnerDataInstance] == d.instance {
		return nil
	}
	if v := m.OwnerData[OwnerDataNode]; v != "" && m.OwnerData[OwnerDataInstance] == d.instance && v != n.Name {
		return drivers.Errorf(drivers.Permanent, "maas: machine %s is marked for node %q of this site, not %q: resolve that node first", m.SystemID, v, n.Name)
	}
	if err := d.checkOurs(ctx, m, n.Name); err != nil {
		return err
	}
	if err := d.setOwnerData(ctx, m.SystemID, n); err != nil {
		return err
	}
	done.add("owner data marks node %s", n.Name)
	return nil
}

// knownTags reads MAAS's tags by name.
//
// The map is built once per read of the tag list and shared by every
// caller until the next read: read it, never change it.
func (d *Driver) knownTags(ctx context.Context) (map[string]mTag, error) {
	v, err := d.c.cache.derive(ctx, d.c, "tags/", "", func(b []byte) (any, error) {
		var tags []mTag
		if err := segjson.Unmarshal(b, &tags); err != nil {
			return nil, drivers.Errorf(drivers.Permanent, "maas GET tags/: decode the answer: %s", drivers.PeerText(err.Error(), d.c.secrets...))
		}
		exists := make(map[string]mTag, len(tags))
		for _, t := range tags {
			exists[t.Name] = t
		}
		return exists, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string]mTag), nil
}

// repairTags adds the design's missing tags.
func (d *Driver) repairTags(ctx context.Context, m *mMachine, n drivers.Node, done *cfgChanges) error {
	exists, err := d.knownTags(ctx)
	if err != nil {
		return err
	}
	for _, t := range n.Tags {
		if slices.Contains(m.TagNames, t) {
			continue
		}
		if err := d.addTag(ctx, m.SystemID, t, exists, false, done); err != nil {
			return err
		}
	}
	return nil
}

// repairKernelTag makes the machine's kernel parameter tag the design's.
func (d *Driver) repairKernelTag(ctx context.Context, m *mMachine, n drivers.Node, done *cfgChanges) error {
	exists, err := d.knownTags(ctx)
	if err != nil {
		return err
	}
	ktag := ""
	if opts := kernelOpts(n.Platform.KernelParams); opts != "" {
		ktag = kernelTag(opts)
		if err := d.ensureKernelTag(ctx, exists, ktag, opts, done); err != nil {
			return err
		}
	}
	for _, t := range m.TagNames {
		if isKernelTag(t) && t != ktag {
			if err := d.tagNodes(ctx, t, "remove", m.SystemID); err != nil {
				return err
			}
			done.add("untagged %s", t)
		}
	}
	if ktag != "" && !slices.Contains(m.TagNames, ktag) {
		if err := d.tagNodes(ctx, ktag, "add", m.SystemID); err != nil {
			return err
		}
		done.add("tagged %s", ktag)
	}
	return nil
}
