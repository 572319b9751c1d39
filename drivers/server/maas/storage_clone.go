package maas

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// Storage by clone. The nodes of one hardware profile share their design
// storage and their disks, and building it costs a machine seven
// requests (the layout, then each further logical volume created,
// formatted and mounted). Once one machine holds it, checked against the
// design, MAAS's clone (POST machines/?op=clone storage=true, MAAS 3.x)
// copies it onto another machine in one request: its partitions,
// filesystems, volume groups and logical volumes, the boot disk onto the
// boot disk. The driver then reads the machine once (kept in the read
// cache: the platform step starts from it) and compares it with the
// design, as after a build; a clone MAAS refuses, or one that reads
// otherwise (the source changed since), forgets that source and builds.
//
// Only a plan on the boot disk alone is cloned (what the LVM layout path
// builds; MAAS maps the other disks by size, which the design's aliases
// need not follow), from a source whose disks are the same sizes.

// storageTemplates are, by cloneKey, the machines whose storage was seen
// equal to the design.
type storageTemplates struct {
	mu       sync.Mutex
	by       map[string]string        // cloneKey -> system ID
	building map[string]chan struct{} // cloneKey -> closed when the node building it ends (claim)
}

// claim says how a node without a source for key goes on. When another
// node is building key's storage, wait is closed once that build ends
// (then the node clones it, or builds when it left no source). Otherwise
// the caller may build, and end ends its claim (call it when the build
// ended, whatever the outcome).
func (t *storageTemplates) claim(key string) (end func(), wait <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by[key] != "" {
		return func() {}, nil
	}
	if ch, ok := t.building[key]; ok {
		return func() {}, ch
	}
	if t.building == nil {
		t.building = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	t.building[key] = ch
	return func() {
		t.mu.Lock()
		delete(t.building, key)
		t.mu.Unlock()
		close(ch)
	}, nil
}

func (t *storageTemplates) get(key string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.by[key]
}

func (t *storageTemplates) put(key, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[string]string{}
	}
	if _, ok := t.by[key]; !ok && len(t.by) < maxStorageTemplates {
		t.by[key] = id
	}
}

// drop forgets id as the source of key (unless another replaced it).
func (t *storageTemplates) drop(key, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by[key] == id {
		delete(t.by, key)
	}
}

// awaitStorageBuild waits, when another node is building key's storage
// and no machine holds it yet, until that build ends, so that this node
// clones it instead of building its own (six requests more; at 100 nodes
// 44 built theirs beside the first). The wait lends the engine's slot and
// is bounded by storageBuildWait. end ends this node's own claim to build.
func (d *Driver) awaitStorageBuild(ctx context.Context, key string) (end func()) {
	end, wait := d.storageSources.claim(key)
	if wait == nil {
		return end
	}
	resume := drivers.Waiting(ctx)
	defer resume()
	timer := time.NewTimer(storageBuildWait)
	defer timer.Stop()
	select {
	case <-wait:
	case <-timer.C:
	case <-ctx.Done():
	}
	return end
}

// storageBuildWait bounds the wait for another node's storage build.
const storageBuildWait = time.Minute

// maxStorageTemplates bounds the sources kept (one per design storage
// and disk sizes: a site has a handful).
const maxStorageTemplates = 1024

// cloneKey says whether the plan may be cloned on m and from which
// machines: those with the same design storage, boot disk size and
// other disks' sizes.
func cloneKey(m *mMachine, n drivers.Node, plan *storagePlan) (string, bool) {
	if m.BootDisk == nil || len(plan.vgs) > 1 || len(plan.disks) != 1 || plan.disks[0].bd.ID != m.BootDisk.ID {
		return "", false
	}
	design, err := json.Marshal(n.Storage)
	if err != nil {
		return "", false
	}
	var others []int64
	for _, b := range m.BlockDevices {
		if b.Type == "physical" && b.ID != m.BootDisk.ID {
			others = append(others, b.Size)
		}
	}
	slices.Sort(others)
	sum := sha256.Sum256(fmt.Appendf(design, "|%d|%v", m.BootDisk.Size, others))
	return hex.EncodeToString(sum[:]), true
}

// storageByClone clones the storage of a machine that holds the plan
// onto m and checks the result; ok is false when there is no such
// machine or the clone did not give the design (then nothing is left
// that the build does not replace).
func (d *Driver) storageByClone(ctx context.Context, m *mMachine, plan *storagePlan, key string) (cfgChanges, bool, error) {
	var done cfgChanges
	src := d.storageSources.get(key)
	if src == "" || src == m.SystemID {
		return done, false, nil
	}
	p := url.Values{"source": {src}, "destinations": {m.SystemID}, "storage": {"true"}}
	if err := d.c.call(ctx, http.MethodPost, "machines/", "clone", p, nil); err != nil {
		if drivers.Classify(err) == drivers.Permanent { // MAAS will not: build it
			d.storageSources.drop(key, src)
			return done, false, nil
		}
		return done, false, err
	}
	since := d.c.cache.begin()
	var ans layoutAnswer
	if err := d.c.call(ctx, http.MethodGet, "machines/"+url.PathEscape(m.SystemID)+"/", "", nil, &ans); err != nil {
		return done, false, err
	}
	d.c.cache.putMachines(since, []mMachine{ans.mMachine}) // the platform step reads it next
	var name string
	for vg := range plan.vgs {
		name = vg
	}
	var vgs []mVolumeGroup
	if name != "" {
		var ok bool
		if vgs, ok = ans.volumeGroup(name); !ok {
			d.storageSources.drop(key, src)
			return done, false, nil
		}
	}
	got := storagePlan{disks: slices.Clone(plan.disks), vgs: plan.vgs}
	for i := range got.disks { // as the clone left them
		k := slices.IndexFunc(ans.BlockDevices, func(b mBlockDevice) bool { return b.ID == got.disks[i].bd.ID })
		if k < 0 {
			d.storageSources.drop(key, src)
			return done, false, nil
		}
		got.disks[i].bd = &ans.BlockDevices[k]
	}
	if diff := got.compare(&ans.mMachine, vgs); diff != "" {
		d.storageSources.drop(key, src)
		return done, false, nil
	}
	done.add("cloned from machine %s (the same design storage and disks)", src)
	return done, true, nil
}
