package maas

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// KernelTagPrefix starts the names of the tags that carry kernel
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

// ApplyPlatform gives the machine the design's tags and its kernel
// parameters (through a tag carrying them as kernel_opts, named after
// them: slipway-kernel-<hash>, shared by every machine with the same
// parameters). The image and kernel are chosen at deploy time (Deploy),
// not here, and so is the owner data: MAAS clears it when the machine is
// released, and Deploy sets it, the design's with this orchestrator's
// mark, right after it allocates the machine.
//
// Tagging is batched: the machines tagged with the same tag within the
// batch window are added in one update_nodes request (tags.go), and a
// node's tags are sent at once.
func (d *Driver) ApplyPlatform(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	defer d.tagging.arrived(n.MachineID) // tagged, or not on its way to (tags.go)
	m, wait, err := d.configurable(ctx, n, "platform", partTags)
	if err != nil || wait != nil {
		return cfgResult(wait), err
	}
	id := m.SystemID
	exists, err := d.knownTags(ctx)
	if err != nil {
		return drivers.Result{}, err
	}
	var done cfgChanges
	tp := planTags(m, n, exists)
	if tp.ktag != "" {
		if err := d.ensureKernelTag(ctx, exists, tp.ktag, tp.opts, &done); err != nil {
			return drivers.Result{}, err
		}
	}
	tagged, err := d.applyTags(ctx, id, tp, exists)
	if err != nil {
		return drivers.Result{}, err
	}
	done = append(done, tagged...)
	r := done.result("platform", id)
	r.Message += "; image " + orNone(n.Platform.Image) + " and kernel " + orNone(n.Platform.Kernel) + " are applied at deploy"
	return r, nil
}

// applyTags removes the machine's kernel tags the node no longer has and
// adds the tags it lacks (creating those MAAS lacks first), all in their
// tags' batches at once (tagAll): the node waits for one batch window,
// not one per tag.
func (d *Driver) applyTags(ctx context.Context, id string, tp tagPlan, exists map[string]mTag) (cfgChanges, error) {
	var done cfgChanges
	var ops []tagOp
	for _, t := range tp.untag { // kernel parameters the node no longer has
		ops = append(ops, tagOp{t, "remove"})
		done.add("untagged %s", t)
	}
	for _, t := range tp.add {
		if err := d.ensureTag(ctx, t, exists, t == tp.ktag, &done); err != nil {
			return nil, err
		}
		ops = append(ops, tagOp{t, "add"})
		done.add("tagged %s", t)
	}
	if len(ops) == 0 {
		return done, nil
	}
	if err := d.tagAll(ctx, id, ops); err != nil {
		return nil, err
	}
	return done, nil
}

// tagPlan is what ApplyPlatform changes in the machine's tags (planTags).
type tagPlan struct {
	ktag, opts   string   // the kernel parameters' tag and its kernel_opts ("": none)
	ensureKernel bool     // MAAS lacks that tag, or it carries other kernel_opts
	untag        []string // kernel tags the node no longer has
	add          []string // the design's tags the machine lacks, the kernel tag among them
}

// planTags compares the machine's tags with the node's (exists: MAAS's
// tags by name). It reads nothing and writes nothing.
func planTags(m *mMachine, n drivers.Node, exists map[string]mTag) tagPlan {
	var tp tagPlan
	want := slices.Clone(n.Tags)
	if opts := kernelOpts(n.Platform.KernelParams); opts != "" {
		tp.ktag, tp.opts = kernelTag(opts), opts
		t, ok := exists[tp.ktag]
		tp.ensureKernel = !ok || t.KernelOpts != opts
		want = append(want, tp.ktag)
	}
	for _, t := range m.TagNames {
		if strings.HasPrefix(t, KernelTagPrefix) && t != tp.ktag {
			tp.untag = append(tp.untag, t)
		}
	}
	for _, t := range want {
		if !slices.Contains(m.TagNames, t) {
			tp.add = append(tp.add, t)
		}
	}
	return tp
}

// addTag tags the machine with t (ensureTag first), in its own batch
// wait.
func (d *Driver) addTag(ctx context.Context, id, t string, exists map[string]mTag, kernel bool, done *cfgChanges) error {
	if err := d.ensureTag(ctx, t, exists, kernel, done); err != nil {
		return err
	}
	if err := d.tagNodes(ctx, t, "add", id); err != nil {
		return err
	}
	done.add("tagged %s", t)
	return nil
}

// ensureTag makes sure MAAS has tag t to set on a machine: it creates
// it when MAAS lacks it (a kernel tag, made by ensureKernelTag, never
// here), once for the nodes that find it missing at the same time or
// within the tag list's lifetime in the read cache (tagsMade). An automatic tag (one with a definition) cannot be set on a
// machine: a Permanent error.
func (d *Driver) ensureTag(ctx context.Context, t string, exists map[string]mTag, kernel bool, done *cfgChanges) error {
	tag, ok := exists[t]
	switch {
	case !ok && !kernel && !d.tagsMade.recent(t):
		_, err, shared := d.c.cache.flight.Do("tag:"+t, func() (any, error) {
			err := d.c.call(ctx, http.MethodPost, "tags/", "", url.Values{"name": {t}}, nil)
			if err != nil && !isConflict(err) && !isBadRequestExists(err) {
				return nil, err
			}
			d.tagsMade.note(t)
			return nil, nil
		})
		if err != nil {
			return err
		}
		if !shared {
			done.add("created tag %s", t)
		}
	case ok && tag.Definition != "":
		return drivers.Errorf(drivers.Permanent, "maas: tag %s is an automatic tag (definition %q): MAAS does not let it be set on a machine", t, tag.Definition)
	}
	return nil
}

// kernelTag names the tag of a set of kernel parameters.
func kernelTag(opts string) string {
	sum := sha256.Sum256([]byte(opts))
	return KernelTagPrefix + hex.EncodeToString(sum[:6])
}

// ensureKernelTag creates the kernel parameters' tag, or gives it back
// its kernel_opts when someone changed them.
func (d *Driver) ensureKernelTag(ctx context.Context, exists map[string]mTag, ktag, opts string, done *cfgChanges) error {
	t, ok := exists[ktag]
	if (ok && t.KernelOpts == opts) || d.tagsMade.recent(ktag+"\x00"+opts) {
		return nil
	}
	_, err, _ := d.c.cache.flight.Do("tag:"+ktag, func() (any, error) { return nil, d.makeKernelTag(ctx, ok, ktag, opts) })
	if err != nil {
		return err
	}
	done.add("tag %s kernel_opts=%q", ktag, opts)
	return nil
}

// makeKernelTag creates the kernel tag (found: MAAS has it with other
// kernel_opts: sets them), once for the nodes that find it missing at
// the same time.
func (d *Driver) makeKernelTag(ctx context.Context, found bool, ktag, opts string) error {
	if d.tagsMade.recent(ktag + "\x00" + opts) {
		return nil
	}
	var t mTag
	var err error
	if !found {
		err = d.c.call(ctx, http.MethodPost, "tags/", "", url.Values{"name": {ktag}, "kernel_opts": {opts},
			"comment": {"kernel parameters set by slipway"}}, nil)
		if isConflict(err) || isBadRequestExists(err) { // created meanwhile: check it
			if err = d.c.call(ctx, http.MethodGet, "tags/"+url.PathEscape(ktag)+"/", "", nil, &t); err == nil && t.KernelOpts == opts {
				d.tagsMade.note(ktag + "\x00" + opts)
				return nil
			}
		}
	}
	if err == nil {
		err = d.c.call(ctx, http.MethodPut, "tags/"+url.PathEscape(ktag)+"/", "", url.Values{"kernel_opts": {opts}}, nil)
	}
	if err == nil {
		d.tagsMade.note(ktag + "\x00" + opts)
	}
	return err
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
