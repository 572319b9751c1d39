package maas

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// KernelTagPrefix names the per-node tag that carries a node's kernel
// parameters (MAAS applies a tag's kernel_opts to the machines it tags).
const KernelTagPrefix = "slipway-kernel-"

type mTag struct {
	Name       string `json:"name"`
	Definition string `json:"definition"`
	KernelOpts string `json:"kernel_opts"`
}

// kernelOpts renders kernel parameters: key=value, sorted by key, a value
// "true" as a bare flag.
func kernelOpts(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		if v := params[k]; v == "true" {
			out = append(out, k)
		} else {
			out = append(out, k+"="+v)
		}
	}
	return strings.Join(out, " ")
}

// ApplyPlatform gives the machine the design's tags, its kernel parameters
// (through the per-node tag slipway-kernel-<hostname>) and its owner data.
// The image and kernel are chosen at deploy time (Deploy), not here.
//
// Owner data: MAAS (and the simulator) accept set_owner_data in any state,
// but MAAS clears a machine's owner data when it is released, so it is set
// again at every provisioning.
func (d *Driver) ApplyPlatform(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	m, wait, err := d.configurable(ctx, n, "platform")
	if err != nil || wait != nil {
		return cfgResult(wait), err
	}
	id := m.SystemID
	var tags []mTag
	if err := d.c.call(ctx, http.MethodGet, "tags/", "", nil, &tags); err != nil {
		return drivers.Result{}, err
	}
	exists := map[string]mTag{}
	for _, t := range tags {
		exists[t.Name] = t
	}
	var done cfgChanges
	want := slices.Clone(n.Tags)
	host := n.Hostname
	if host == "" {
		host = n.Name
	}
	ktag := KernelTagPrefix + host
	opts := kernelOpts(n.Platform.KernelParams)
	if opts != "" {
		t, ok := exists[ktag]
		switch {
		case !ok:
			if err := d.c.call(ctx, http.MethodPost, "tags/", "", url.Values{"name": {ktag}, "kernel_opts": {opts},
				"comment": {"kernel parameters of node " + n.Name + " (slipway)"}}, nil); err != nil && !isConflict(err) {
				return drivers.Result{}, err
			}
			done.add("tag %s kernel_opts=%q", ktag, opts)
		case t.KernelOpts != opts:
			if err := d.c.call(ctx, http.MethodPut, "tags/"+url.PathEscape(ktag)+"/", "", url.Values{"kernel_opts": {opts}}, nil); err != nil {
				return drivers.Result{}, err
			}
			done.add("tag %s kernel_opts=%q (was %q)", ktag, opts, t.KernelOpts)
		}
		want = append(want, ktag)
	} else if slices.Contains(m.TagNames, ktag) {
		if err := d.c.call(ctx, http.MethodPost, "tags/"+url.PathEscape(ktag)+"/", "update_nodes", url.Values{"remove": {id}}, nil); err != nil {
			return drivers.Result{}, err
		}
		done.add("untagged %s (no kernel parameters)", ktag)
	}
	for _, t := range want {
		if slices.Contains(m.TagNames, t) {
			continue
		}
		if _, ok := exists[t]; !ok && t != ktag {
			if err := d.c.call(ctx, http.MethodPost, "tags/", "", url.Values{"name": {t}}, nil); err != nil && !isConflict(err) && !isBadRequestExists(err) {
				return drivers.Result{}, err
			}
			done.add("created tag %s", t)
		} else if ok && exists[t].Definition != "" {
			return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: tag %s is an automatic tag (definition %q): MAAS does not let it be set on a machine", t, exists[t].Definition)
		}
		if err := d.c.call(ctx, http.MethodPost, "tags/"+url.PathEscape(t)+"/", "update_nodes", url.Values{"add": {id}}, nil); err != nil {
			return drivers.Result{}, err
		}
		done.add("tagged %s", t)
	}
	od := url.Values{}
	for k, v := range n.OwnerData {
		if m.OwnerData[k] != v {
			od.Set(k, v)
		}
	}
	if len(od) > 0 {
		if err := d.c.call(ctx, http.MethodPost, "machines/"+id+"/", "set_owner_data", od, nil); err != nil {
			return drivers.Result{}, err
		}
		keys := make([]string, 0, len(od))
		for k := range od {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		done.add("owner data %s", strings.Join(keys, ", "))
	}
	r := done.result("platform", id)
	r.Message += "; image " + orNone(n.Platform.Image) + " and kernel " + orNone(n.Platform.Kernel) + " are applied at deploy"
	return r, nil
}

// isBadRequestExists: MAAS answers 400 "Tag with this Name already exists."
// when another caller created the tag in between.
func isBadRequestExists(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

func orNone(s string) string {
	if s == "" {
		return "(default)"
	}
	return s
}
