package maas

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	segjson "github.com/segmentio/encoding/json"
	"github.com/slipway-dev/slipway/drivers"
)

// IdentifyNode finds the node's machine: by the known MachineID, else by
// hostname (MAAS cannot filter on owner data; hostnames are unique), else
// by boot MAC, else by BMC address (the power_address of every machine's
// power parameters, one request, host or host:port). A machine found by
// hostname must not carry another node's owner data mark.
//
// When none is found and the node has a boot MAC, the machine is enlisted
// (POST machines/ with the MAC, hostname, amd64/generic, domain) and
// commissioning later discovers the rest; without one the answer is
// InProgress until the machine PXE-boots and enlists itself.
//
// Once found, the hostname (and domain, when it exists in MAAS) and the
// power parameters (from Node.Power, when given) are set if different. Owner data is not set here: it marks allocation (Deploy).
func (d *Driver) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	m, how, enlisted, wait, err := d.locate(ctx, n)
	if err != nil || m == nil {
		return drivers.Machine{}, wait, err
	}
	if v := m.OwnerData[OwnerDataNode]; v != "" && v != n.Name && m.OwnerData[OwnerDataInstance] == d.instance {
		return drivers.Machine{}, drivers.Result{}, drivers.Errorf(drivers.Permanent,
			"maas: machine %s (found by %s) is marked for node %q, not %q", m.SystemID, how, v, n.Name)
	}
	changed, err := d.settleMachine(ctx, m, n, enlisted)
	if err != nil {
		return drivers.Machine{}, drivers.Result{}, err
	}
	msg := fmt.Sprintf("node %s is machine %s (%s), found by %s", n.Name, m.SystemID, m.StatusName, how)
	if changed != "" {
		msg += "; set " + changed
	}
	return d.toMachine(m, n.Name), drivers.Done("%s", msg), nil
}

// locate finds the node's machine; failing that, it chooses and claims
// one by the node's constraints, or enlists one by its boot MAC. Without
// a machine it answers the result to give (waiting for the machine to
// enlist, or for one that matches). enlisted: MAAS got the machine's
// power parameters from the enlistment, or the machine keeps its own.
func (d *Driver) locate(ctx context.Context, n drivers.Node) (m *mMachine, how string, enlisted bool, wait drivers.Result, err error) {
	if m, how, err = d.findMachine(ctx, n); err != nil || m != nil {
		return m, how, false, drivers.Result{}, err
	}
	if n.BootMAC == "" && n.Constraints != nil {
		// Not pinned: choose a Ready machine the constraints match and
		// claim it (hostname and claim tag); it stays Ready for
		// commissioning and configuration, and Deploy allocates it.
		cm, res, err := d.claimBy(ctx, n)
		if err != nil || cm == nil {
			return nil, "", false, res, err
		}
		return cm, "allocation by constraints (" + describeConstraints(n.Constraints) + "), claimed", true, drivers.Result{}, nil
	}
	if n.BootMAC == "" {
		return nil, "", false, drivers.InProgress(pollEnlist,
			"waiting for the machine of node %s to enlist; power it on with PXE (BMC %s)", n.Name, orText(n.BMCAddress, "unknown")), nil
	}
	m, how, enlisted, err = d.enlistOrFind(ctx, n)
	return m, how, enlisted, drivers.Result{}, err
}

// enlistOrFind enlists the node's machine by its boot MAC. MAAS refuses
// a MAC in use: the machine may have enlisted meanwhile (by itself, or a
// concurrent call), so a failed enlistment looks once more.
func (d *Driver) enlistOrFind(ctx context.Context, n drivers.Node) (*mMachine, string, bool, error) {
	m, err := d.enlist(ctx, n)
	if err == nil {
		return m, "enlisted with boot MAC " + n.BootMAC, true, nil
	}
	if ctx.Err() != nil {
		return nil, "", false, err
	}
	fm, fhow, ferr := d.findMachine(ctx, n)
	if ferr != nil || fm == nil {
		return nil, "", false, err
	}
	return fm, fhow, false, nil
}

// settleMachine sets what identification owns on a found machine: its
// hostname, an unpinned node's claim tag, and (unless enlisted) its power
// parameters. It answers what it set, "" when nothing.
func (d *Driver) settleMachine(ctx context.Context, m *mMachine, n drivers.Node, enlisted bool) (string, error) {
	changed, err := d.ensureName(ctx, m, n)
	if err != nil {
		return "", err
	}
	if n.BootMAC == "" && n.Constraints != nil && !slices.Contains(m.TagNames, d.claimTag()) {
		// An unpinned node's machine found again after a release took
		// its claim (a redeploy): claim it again, so no other node's dry
		// run chooses it.
		if err := d.ensureClaimTag(ctx, d.claimTag()); err != nil {
			return "", err
		}
		if err := d.tagNodes(ctx, d.claimTag(), "add", m.SystemID); err != nil {
			return "", err
		}
		m.TagNames = append(m.TagNames, d.claimTag())
		changed = joinChanged(changed, "claim tag "+d.claimTag())
	}
	if enlisted { // enlist gave MAAS the power parameters (or the machine was chosen by constraints: its own are kept)
		return changed, nil
	}
	power, err := d.ensurePower(ctx, m, n)
	if err != nil {
		return "", err
	}
	return joinChanged(changed, power), nil
}

// joinChanged adds what was set to a list of them ("" adds nothing).
func joinChanged(changed, more string) string {
	if more == "" {
		return changed
	}
	return strings.TrimPrefix(changed+", "+more, ", ")
}

// findMachine runs the look-ups in order (machine ID, hostname, boot MAC,
// BMC address); nil when none matches.
func (d *Driver) findMachine(ctx context.Context, n drivers.Node) (*mMachine, string, error) {
	type look struct {
		how  string
		find func() ([]mMachine, error)
	}
	var looks []look
	if n.MachineID != "" {
		looks = append(looks, look{"machine ID", func() ([]mMachine, error) { return d.listMachines(ctx, url.Values{"id": {n.MachineID}}) }})
	}
	if h := n.Hostname; h != "" {
		looks = append(looks, look{"hostname " + h, func() ([]mMachine, error) { return d.lookup(ctx, "hostname", h) }})
	}
	if mac := n.BootMAC; mac != "" {
		looks = append(looks, look{"boot MAC " + mac, func() ([]mMachine, error) { return d.lookup(ctx, "mac_address", strings.ToLower(mac)) }})
	}
	if n.BMCAddress != "" {
		looks = append(looks, look{"BMC address " + n.BMCAddress, func() ([]mMachine, error) { return d.machinesByBMC(ctx, n) }})
	}
	for _, l := range looks {
		ms, err := l.find()
		if err != nil {
			return nil, "", err
		}
		if len(ms) > 1 {
			ids := make([]string, len(ms))
			for i := range ms {
				ids[i] = ms[i].SystemID
			}
			return nil, "", drivers.Errorf(drivers.NeedsIntervention, "maas: %s matches several machines (%s)", l.how, strings.Join(ids, ", "))
		}
		if len(ms) == 1 {
			return &ms[0], l.how, nil
		}
	}
	return nil, "", nil
}

// listMachines reads the machines the filter selects.
func (d *Driver) listMachines(ctx context.Context, filter url.Values) ([]mMachine, error) {
	var ms []mMachine
	err := d.c.call(ctx, http.MethodGet, "machines/", "", filter, &ms)
	return ms, err
}

// machinesByBMC reads the machines whose power address is the node's BMC,
// from the power parameters read for every node identified in the last
// 30 s; a node that waits for its machine to enlist itself (no boot MAC)
// reads them afresh on a miss. A node with a boot MAC is not found by it
// only when its machine enlisted with another MAC, under another
// hostname, in the last 30 s.
func (d *Driver) machinesByBMC(ctx context.Context, n drivers.Node) ([]mMachine, error) {
	ids, err := d.machinesWithBMC(ctx, n.BMCAddress, false)
	if err == nil && len(ids) == 0 && n.BootMAC == "" {
		ids, err = d.machinesWithBMC(ctx, n.BMCAddress, true)
	}
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return d.listMachines(ctx, url.Values{"id": ids})
}

// machinesWithBMC lists the machines whose power address is the BMC's,
// from every machine's power parameters (one request shared by the nodes
// identified at the same time; fresh forces a new read).
func (d *Driver) machinesWithBMC(ctx context.Context, bmc string, fresh bool) ([]string, error) {
	if fresh {
		d.c.cache.forget("machines/", "power_parameters")
	}
	v, err := d.c.cache.derive(ctx, d.c, "machines/", "power_parameters", func(body []byte) (any, error) {
		var params map[string]struct {
			Address string `json:"power_address"`
		}
		if err := segjson.Unmarshal(body, &params); err != nil {
			return nil, drivers.Errorf(drivers.Permanent, "maas GET machines/?op=power_parameters: decode the answer: %v", err)
		}
		byHost := map[string][]bmcEntry{} // the power addresses by host, lower case
		for id, p := range params {
			if p.Address != "" {
				h, _ := splitBMC(p.Address)
				byHost[h] = append(byHost[h], bmcEntry{id: id, addr: p.Address})
			}
		}
		return byHost, nil
	})
	if err != nil {
		return nil, err
	}
	h, _ := splitBMC(bmc)
	var ids []string
	for _, e := range v.(map[string][]bmcEntry)[h] {
		if sameBMC(e.addr, bmc) {
			ids = append(ids, e.id)
		}
	}
	return ids, nil
}

type bmcEntry struct{ id, addr string }

// lookupBatch is the most values of one filter in a lookup request (the
// URL stays under 4 KB).
const lookupBatch = 100

// lookup answers the machines whose hostname or MAC (field: hostname,
// mac_address) is value, in one request with the lookups of other nodes
// made at the same time (internal/batch): MAAS answers the machines that
// match any of a filter's values, and each caller takes its own.
func (d *Driver) lookup(ctx context.Context, field, value string) ([]mMachine, error) {
	return d.lookups.Do(ctx, field, value, func(ctx context.Context, values []string) ([][]mMachine, error) {
		since := d.c.cache.begin()
		var ms []mMachine
		if err := d.c.call(ctx, http.MethodGet, "machines/", "", url.Values{field: values}, &ms); err != nil {
			return nil, err
		}
		d.c.cache.putMachines(since, ms)
		out := make([][]mMachine, len(values))
		for i, v := range values {
			for _, m := range ms {
				if matches(&m, field, v) {
					out[i] = append(out[i], m)
				}
			}
		}
		return out, nil
	})
}

// matches: the machine has the hostname or MAC.
func matches(m *mMachine, field, v string) bool {
	if field == "hostname" {
		return strings.EqualFold(m.Hostname, v)
	}
	for _, in := range m.Interfaces {
		if strings.EqualFold(in.MAC, v) {
			return true
		}
	}
	return false
}

// sameBMC compares a MAAS power_address with the node's BMC address: the
// same host, and the same port when both name one (a missing port on
// MAAS's side is IPMI's 623). An IPMI URL's host part counts.
func sameBMC(powerAddr, want string) bool {
	ph, pp := splitBMC(powerAddr)
	wh, wp := splitBMC(want)
	if ph == "" || ph != wh {
		return false
	}
	return wp == "" || wp == pp || (pp == "" && wp == "623")
}

// splitBMC is a BMC address's host (lower case) and port ("" if none).
func splitBMC(s string) (string, string) {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = u.Host
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.Trim(s, "[]")), ""
}

func (d *Driver) enlist(ctx context.Context, n drivers.Node) (*mMachine, error) {
	// MAAS commissions a machine an administrator creates (commission
	// defaults to true): it starts now, with the parameters Commission
	// would give it, which then finds it commissioning (one request
	// less than a create and a commission).
	p := d.commissionParams(url.Values{"mac_addresses": {strings.ToLower(n.BootMAC)}, "architecture": {"amd64/generic"}, "commission": {"1"}}, n.Scripts)
	if n.Hostname != "" {
		p.Set("hostname", n.Hostname)
	}
	if n.Domain != "" {
		ok, err := d.domainExists(ctx, n.Domain)
		if err != nil {
			return nil, err
		}
		if ok {
			p.Set("domain", n.Domain)
		}
	}
	if n.Power != nil && powerTypes[n.Power.Type] && n.Power.Address != "" {
		p.Set("power_type", n.Power.Type)
		for k, v := range powerParams(n.Power) {
			p[k] = v
		}
	}
	since := d.c.cache.begin()
	var m mMachine
	if err := d.c.call(ctx, http.MethodPost, "machines/", "", p, &m); err != nil {
		return nil, err
	}
	d.c.cache.putMachines(since, []mMachine{m}) // MAAS answers the new machine in full
	return &m, nil
}

func (d *Driver) domainExists(ctx context.Context, name string) (bool, error) {
	var ds []mDomain
	if err := d.c.cache.list(ctx, d.c, "domains/", "", &ds); err != nil {
		return false, err
	}
	for _, x := range ds {
		if x.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// ensureName sets the hostname and domain when they differ; it answers
// what it changed.
func (d *Driver) ensureName(ctx context.Context, m *mMachine, n drivers.Node) (string, error) {
	p := url.Values{}
	var what []string
	if n.Hostname != "" && m.Hostname != n.Hostname {
		p.Set("hostname", n.Hostname)
		what = append(what, "hostname "+n.Hostname)
	}
	if n.Domain != "" && m.Domain.Name != n.Domain {
		ok, err := d.domainExists(ctx, n.Domain)
		if err != nil {
			return "", err
		}
		if ok {
			p.Set("domain", n.Domain)
			what = append(what, "domain "+n.Domain)
		}
	}
	if len(p) == 0 {
		return "", nil
	}
	var nm mMachine
	if err := d.c.call(ctx, http.MethodPut, "machines/"+url.PathEscape(m.SystemID)+"/", "", p, &nm); err != nil {
		return "", err
	}
	*m = nm
	return strings.Join(what, ", "), nil
}

// toMachine is the drivers' view of a MAAS machine. Owned means it
// carries this instance's owner data mark (set by Deploy after allocating
// it); node is the design node asked about, or the mark's.
func (d *Driver) toMachine(m *mMachine, node string) drivers.Machine {
	out := drivers.Machine{MachineID: m.SystemID, Node: node, Hostname: m.Hostname, State: m.StatusName,
		Power: powerState(m.PowerState), Owned: m.OwnerData[OwnerDataNode] != "" && m.OwnerData[OwnerDataInstance] == d.instance}
	if out.Owned {
		out.OwnerNode = m.OwnerData[OwnerDataNode]
	}
	if out.Node == "" {
		out.Node = m.OwnerData[OwnerDataNode]
	}
	out.Tags = userTags(m.TagNames)
	return out
}

func powerState(s string) drivers.PowerState {
	switch s {
	case "on":
		return drivers.PowerOn
	case "off":
		return drivers.PowerOff
	}
	return drivers.PowerUnknown
}

// constraintParams are MAAS's allocate parameters of the constraints.
func constraintParams(c *drivers.Constraints) url.Values {
	p := url.Values{}
	if c.Zone != "" {
		p.Set("zone", c.Zone)
	}
	if c.Pool != "" {
		p.Set("pool", c.Pool)
	}
	for _, t := range c.Tags {
		if t != "" {
			p.Add("tags", t)
		}
	}
	if c.MinCPU > 0 {
		p.Set("cpu_count", strconv.Itoa(c.MinCPU))
	}
	if c.MinMemoryMiB > 0 {
		p.Set("mem", strconv.FormatInt(c.MinMemoryMiB, 10))
	}
	return p
}

func describeConstraints(c *drivers.Constraints) string {
	var parts []string
	p := constraintParams(c)
	for _, k := range []string{"zone", "pool", "tags", "cpu_count", "mem"} {
		if vs := p[k]; len(vs) > 0 {
			parts = append(parts, k+"="+strings.Join(vs, ","))
		}
	}
	if len(parts) == 0 {
		return "any machine"
	}
	return strings.Join(parts, " ")
}

// ClaimTagPrefix begins the tag that marks the machines this
// orchestrator chose by constraints (ClaimTagPrefix + instance): the dry
// runs of other nodes exclude them (not_tags).
const ClaimTagPrefix = "slipway-claimed-"

func (d *Driver) claimTag() string { return ClaimTagPrefix + d.instance }

// claimBy chooses a Ready machine that matches the node's constraints
// (MAAS's allocate with dry_run: the machine MAAS would allocate, not
// allocated) among those no node of this orchestrator claimed, and
// claims it while it is Ready: the node's hostname (the next identify
// finds it by hostname, as a pinned node's) and the claim tag. The
// machine stays Ready so that commissioning, storage and networking
// apply as for a pinned node; Deploy allocates it by system ID. Pick and
// claim are serialized in the driver, so two nodes of this process never
// claim one machine; a machine renamed meanwhile by someone else (another
// orchestrator) is left and another chosen. No match (MAAS's 409) is
// InProgress: a machine may be released or commissioned later.
func (d *Driver) claimBy(ctx context.Context, n drivers.Node) (*mMachine, drivers.Result, error) {
	if n.Hostname == "" {
		return nil, drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: node %s has constraints but no hostname to claim its machine with", n.Name)
	}
	d.claimMu.Lock()
	defer d.claimMu.Unlock()
	// A concurrent identify of this node may have claimed it meanwhile.
	if ms, err := d.lookup(ctx, "hostname", n.Hostname); err != nil || len(ms) > 0 {
		if err != nil || len(ms) > 1 {
			return nil, drivers.Result{}, err
		}
		return &ms[0], drivers.Result{}, nil
	}
	tag := d.claimTag()
	if err := d.ensureClaimTag(ctx, tag); err != nil {
		return nil, drivers.Result{}, err
	}
	for range 5 {
		p := constraintParams(n.Constraints)
		p.Set("not_tags", tag)
		p.Set("dry_run", "true")
		var out mMachine
		err := d.c.call(ctx, http.MethodPost, "machines/", "allocate", p, &out)
		if isConflict(err) {
			return nil, drivers.InProgress(pollEnlist, "no Ready machine matches the constraints of node %s (%s): %v",
				n.Name, describeConstraints(n.Constraints), err), nil
		}
		if err != nil {
			return nil, drivers.Result{}, err
		}
		if out.SystemID == "" {
			return nil, drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: allocate (dry run) answered no machine for node %s", n.Name)
		}
		if err := d.tagNodes(ctx, tag, "add", out.SystemID); err != nil {
			return nil, drivers.Result{}, err
		}
		var nm mMachine
		if err := d.c.call(ctx, http.MethodPut, "machines/"+url.PathEscape(out.SystemID)+"/", "", url.Values{"hostname": {n.Hostname}}, &nm); err != nil {
			return nil, drivers.Result{}, err
		}
		cur, err := d.fetchMachine(ctx, out.SystemID)
		if err != nil {
			return nil, drivers.Result{}, err
		}
		if strings.EqualFold(cur.Hostname, n.Hostname) {
			return cur, drivers.Result{}, nil
		}
		// Renamed by someone else between our rename and the check: it is
		// theirs; it keeps our claim tag, so the next dry run passes it.
	}
	return nil, drivers.InProgress(pollEnlist, "the machines chosen for node %s (%s) were claimed by others meanwhile; choosing again",
		n.Name, describeConstraints(n.Constraints)), nil
}

// ensureClaimTag creates the claim tag when MAAS does not have it.
func (d *Driver) ensureClaimTag(ctx context.Context, tag string) error {
	var tags []mTag
	if err := d.c.cache.list(ctx, d.c, "tags/", "", &tags); err != nil {
		return err
	}
	for _, t := range tags {
		if t.Name == tag {
			return nil
		}
	}
	err := d.c.call(ctx, http.MethodPost, "tags/", "", url.Values{"name": {tag},
		"comment": {"machines chosen by constraints by slipway " + d.instance}}, nil)
	if err != nil && !isConflict(err) && !isBadRequestExists(err) {
		return err
	}
	d.c.cache.forget("tags/", "")
	return nil
}

// unclaim removes the claim tag from a machine being released, so that
// it may be chosen again.
func (d *Driver) unclaim(ctx context.Context, m *mMachine) error {
	if !slices.Contains(m.TagNames, d.claimTag()) {
		return nil
	}
	return d.tagNodes(ctx, d.claimTag(), "remove", m.SystemID)
}
