package maas

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	segjson "github.com/segmentio/encoding/json"
	"golang.org/x/sync/singleflight"

	"github.com/slipway-dev/slipway/drivers"
)

// Read cache. A fleet's nodes ask MAAS the same things at the same time:
// the batched status poll has just read the machine that a node woken by
// it reads again; every node of a site reads the same subnets, tags and
// domains. The cache answers such repeated reads from a recent answer:
//
//   - a machine, for machineTTL (5 s) after MAAS sent it (the poll's batched
//     read counts); its state (status, owner, owner data) for longer while
//     the change feed shows it did not change (cache_feed.go); unless this
//     driver wrote to the machine since: any
//     write under machines/{id}/ or nodes/{id}/, an allocation naming it,
//     a tag change of it. A read that a write overlapped is not kept.
//     Writes of its interfaces, its storage or its tags make only that
//     part stale: a caller says which parts it reads. A status poll
//     decodes only the machines' state, so what it read answers only the
//     callers that need no more.
//   - a machine's node devices (PCI addresses to interfaces and disks),
//     until its commissioning restarts; the interfaces' names in them
//     are not read from the cache after the machine's interfaces were
//     written.
//   - site-wide lists (subnets, tags, domains, every machine's power
//     parameters), for siteTTL, shared by concurrent callers (one request
//     in flight answers them all), dropped when this driver writes to
//     them. Changes made by others show within siteTTL.
//
// Decisions that act on a state read once more without the cache where
// MAAS answered 409 (the state moved), and MAAS refuses a write the state
// does not allow, so a cached read is never more than a slightly older
// one.
type readCache struct {
	machineTTL, deviceTTL, siteTTL time.Duration
	now                            func() time.Time // the clock (tests set their own)

	mu       sync.Mutex
	epoch    uint64               // counts writes
	dropped  map[string]uint64    // system ID or list key → epoch of its last write
	touched  map[string][3]uint64 // system ID → epoch of its last write of each part
	machines map[string]cachedMachine
	devices  map[string]cachedDevices
	lists    map[string]cachedList
	flight   singleflight.Group
	// aged: the machines and devices put, oldest first; each put drops
	// the entries that aged out before it (memory: the cache holds what
	// was read within its TTLs, not every machine ever read). A machine
	// the change feed follows keeps its state alone past machineTTL, in
	// feedAged, until feedTTL.
	aged, agedDevices, feedAged ageQueue
	feedTTL                     time.Duration // SettingCacheFeedTTL (0: the feed keeps nothing)
	feed                        feedState
}

// ageQueue is a first-in first-out list of the keys put, with when.
type ageQueue struct {
	keys []string
	at   []time.Time
	head int
}

func (q *ageQueue) push(key string, at time.Time) {
	if q.head > 0 && q.head >= len(q.keys)/2 { // reuse the front
		n := copy(q.keys, q.keys[q.head:])
		copy(q.at, q.at[q.head:])
		clear(q.keys[n:])
		q.keys, q.at, q.head = q.keys[:n], q.at[:n], 0
	}
	q.keys, q.at = append(q.keys, key), append(q.at, at)
}

// expire pops the keys put before cutoff and calls drop with each and
// when it was put.
func (q *ageQueue) expire(cutoff time.Time, drop func(key string, at time.Time)) {
	for q.head < len(q.keys) && q.at[q.head].Before(cutoff) {
		drop(q.keys[q.head], q.at[q.head])
		q.keys[q.head] = ""
		q.head++
	}
}

type cachedMachine struct {
	m     mMachine
	at    time.Time // when the read was put (its parts are fresh until at+machineTTL)
	stale part      // parts written since the read
	// since is the epoch when the read of its state began, seen when its
	// state was read last (a state read of the same status refreshes the
	// state alone): what the change feed follows (cache_feed.go).
	since uint64
	seen  time.Time
	// raw: the JSON of a Ready machine's state read, for the inventory
	// that takes it (status_read.go); nil once taken, or when not kept.
	raw []byte
}

// part is a part of a machine that a write changes without changing the
// rest: configuring its interfaces leaves its disks, tags and state as
// they were. A write of anything else drops the whole machine.
type part uint8

const (
	partInterfaces part = 1 << iota
	partStorage
	partTags
	partAll = partInterfaces | partStorage | partTags
)

// partOf is the part a write of a machine changes (0: more than one).
func partOf(sub, op string) part {
	switch {
	case sub == "interfaces":
		return partInterfaces
	case sub == "blockdevices" || sub == "volume-groups" || sub == "volume-group" || op == "set_storage_layout":
		return partStorage
	}
	return 0
}

type cachedDevices struct {
	nds   []nodeDevice
	at    time.Time
	since uint64 // the epoch when it was read
}

type cachedList struct {
	body    []byte
	at      time.Time
	derived any // what derive built from body (one kind per list)
}

// Default lifetimes: a machine's phases last minutes, a status poll runs
// every few seconds, and site objects change when an operator changes
// the site.
const (
	defaultMachineTTL = 5 * time.Second
	defaultDeviceTTL  = 10 * time.Minute
	defaultSiteTTL    = 30 * time.Second
)

func newReadCache(machineTTL time.Duration) *readCache {
	return &readCache{machineTTL: machineTTL, deviceTTL: defaultDeviceTTL, siteTTL: defaultSiteTTL, now: time.Now, feedTTL: defaultFeedTTL,
		dropped: map[string]uint64{}, touched: map[string][3]uint64{}, machines: map[string]cachedMachine{}, devices: map[string]cachedDevices{}, lists: map[string]cachedList{}}
}

func (c *readCache) enabled() bool { return c != nil && c.machineTTL > 0 }

// begin is taken before a read: put keeps the answer only when nothing
// it holds was written to since.
func (c *readCache) begin() uint64 {
	if !c.enabled() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

func (c *readCache) putMachines(since uint64, ms []mMachine) { c.putRead(since, ms, 0) }

// keepJSON keeps the JSON of a machine the status read that began at
// since has just put (state only), for the inventory that follows
// (status_read.go).
func (c *readCache) keepJSON(since uint64, id string, raw []byte) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.machines[id]; ok && e.since == since && c.unwritten(id, since) {
		e.raw = raw
		c.machines[id] = e
	}
}

// takeJSON answers, once, the JSON kept of the machine (keepJSON) while
// it is fresh and nothing of the machine was written since it was read,
// with when its read began and when it was answered.
func (c *readCache) takeJSON(id string) (raw []byte, since uint64, at time.Time, ok bool) {
	if !c.enabled() {
		return nil, 0, at, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.machines[id]
	if !ok || e.raw == nil {
		return nil, 0, at, false
	}
	raw = e.raw
	e.raw = nil
	c.machines[id] = e
	if c.now().Sub(e.at) > c.machineTTL || !c.unwritten(id, e.since) {
		return nil, 0, at, false
	}
	return raw, e.since, e.at, true
}

// unwritten says no part of the machine was written since epoch since.
// The caller holds c.mu.
func (c *readCache) unwritten(id string, since uint64) bool {
	if c.dropped[id] > since {
		return false
	}
	for _, e := range c.touched[id] {
		if e > since {
			return false
		}
	}
	return true
}

// putRead keeps machines read without some parts (missing: their
// interfaces and storage, for a status read that decoded only the state).
func (c *readCache) putRead(since uint64, ms []mMachine, missing part) {
	if c.enabled() {
		c.putReadAt(since, c.now(), ms, missing)
	}
}

// putReadAt is putRead of a read MAAS answered at at.
func (c *readCache) putReadAt(since uint64, now time.Time, ms []mMachine, missing part) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireMachines(now)
	for i := range ms {
		id := ms[i].SystemID
		if id == "" || c.dropped[id] > since {
			continue
		}
		if e, ok := c.machines[id]; ok && missing != 0 && e.stale&missing != missing && now.Sub(e.at) <= c.machineTTL && e.m.Status == ms[i].Status {
			// A state read of a machine held in full, whose state did
			// not move: the new state over the parts read before
			// (their writes since marked them stale already).
			e.m.mMachineState = ms[i].mMachineState
			e.since, e.seen = max(e.since, since), now
			c.machines[id] = e
			continue
		}
		stale := missing
		for k, e := range c.touched[id] {
			if e > since { // written while it was read
				stale |= 1 << k
			}
		}
		c.machines[id] = cachedMachine{m: ms[i], at: now, stale: stale, since: since, seen: now}
		c.aged.push(id, now)
	}
}

// machine answers a copy of the cached machine when fresh and none of
// the parts the caller needs was written since; a caller that needs the
// state alone (need 0) is answered past machineTTL too while the change
// feed follows the machine (followed).
func (c *readCache) machine(id string, need part) (*mMachine, bool) {
	if !c.enabled() {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.machines[id]
	if !ok || e.stale&need != 0 {
		return nil, false
	}
	if now := c.now(); now.Sub(e.at) > c.machineTTL && (need != 0 || !c.followed(e, now)) {
		return nil, false
	}
	m := e.m
	return &m, true
}

func (c *readCache) putDevices(since uint64, id string, nds []nodeDevice) {
	if !c.enabled() {
		return
	}
	now := c.now()
	kept := compactDevices(nds)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.agedDevices.expire(now.Add(-c.deviceTTL), func(id string, at time.Time) {
		if e, ok := c.devices[id]; ok && !e.at.After(at) {
			delete(c.devices, id)
		}
	})
	if c.dropped["devices:"+id] <= since {
		c.devices[id] = cachedDevices{nds: kept, at: now, since: since}
		c.agedDevices.push(id, now)
	}
}

// compactDevices is what the cache keeps of a machine's node devices:
// what resolving device aliases reads of them (byNodeDevices: the PCI
// address, the interface's ID, name and MAC, the disk's ID and name), not
// the whole interface and disk objects MAAS sends with each, which
// held most of the cache's memory while thousands of machines waited
// between their inventory and their configure stage.
func compactDevices(nds []nodeDevice) []nodeDevice {
	out := make([]nodeDevice, len(nds))
	for i, nd := range nds {
		out[i].PCIAddress = nd.PCIAddress
		if nd.Interface != nil {
			out[i].Interface = &mInterface{ID: nd.Interface.ID, Name: nd.Interface.Name, MAC: nd.Interface.MAC}
		}
		if nd.Disk != nil {
			out[i].Disk = &mBlockDevice{ID: nd.Disk.ID, Name: nd.Disk.Name}
		}
	}
	return out
}

// forgetDevices drops a machine's node devices: the next read asks MAAS
// (its block devices were replaced behind the driver's back, e.g. by a
// restore of the default configuration).
func (c *readCache) forgetDevices(id string) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.dropped["devices:"+id] = c.epoch
	delete(c.devices, id)
}

// nodeDevices answers the machine's node devices when fresh; nics asks
// for the interfaces' names too, which a write of them changes.
func (c *readCache) nodeDevices(id string, nics bool) ([]nodeDevice, bool) {
	if !c.enabled() {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.devices[id]
	if !ok || c.now().Sub(e.at) > c.deviceTTL || (nics && c.touched[id][0] > e.since) {
		return nil, false
	}
	return e.nds, true
}

// list answers a site-wide GET (path, op) from the cache when fresh, else
// reads it once for every concurrent caller.
func (c *readCache) list(ctx context.Context, cl *client, path, op string, out any) error {
	if !c.enabled() {
		return cl.call(ctx, http.MethodGet, path, op, nil, out)
	}
	body, err := c.raw(ctx, cl, path, op)
	if err != nil {
		return err
	}
	if err := segjson.Unmarshal(body, out); err != nil { // as decodeAnswer: the error quotes the answer
		return drivers.Errorf(drivers.Permanent, "maas GET %s: decode the answer: %s", path, drivers.PeerText(err.Error(), cl.secrets...))
	}
	return nil
}

// derive answers what build makes of a site-wide list, built once per
// read of the list (a large list is then not decoded by every caller).
func (c *readCache) derive(ctx context.Context, cl *client, path, op string, build func([]byte) (any, error)) (any, error) {
	if !c.enabled() {
		var raw json.RawMessage
		if err := cl.call(ctx, http.MethodGet, path, op, nil, &raw); err != nil {
			return nil, err
		}
		return build(raw)
	}
	body, err := c.raw(ctx, cl, path, op)
	if err != nil {
		return nil, err
	}
	key := path + "?op=" + op
	c.mu.Lock()
	if e, ok := c.lists[key]; ok && e.derived != nil && sameBytes(e.body, body) {
		c.mu.Unlock()
		return e.derived, nil
	}
	c.mu.Unlock()
	v, err := build(body)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if e, ok := c.lists[key]; ok && sameBytes(e.body, body) {
		e.derived = v
		c.lists[key] = e
	}
	c.mu.Unlock()
	return v, nil
}

// sameBytes: the same read (not equal contents).
func sameBytes(a, b []byte) bool { return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0] }

// raw is the list's body, from the cache when fresh.
func (c *readCache) raw(ctx context.Context, cl *client, path, op string) ([]byte, error) {
	key := path + "?op=" + op
	c.mu.Lock()
	e, ok := c.lists[key]
	c.mu.Unlock()
	if ok && c.now().Sub(e.at) <= c.siteTTL {
		return e.body, nil
	}
	v, err, _ := c.flight.Do(key, func() (any, error) {
		since := c.begin()
		var raw json.RawMessage
		if err := cl.call(ctx, http.MethodGet, path, op, nil, &raw); err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.dropped[key] <= since {
			c.lists[key] = cachedList{body: raw, at: c.now()}
		}
		c.mu.Unlock()
		return []byte(raw), nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// forget drops a site-wide list: the next list call reads it again.
func (c *readCache) forget(path, op string) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.lists, path+"?op="+op)
}

// wrote drops what a write (method, path, op, params) may change; the
// client calls it before the write is sent and after it ends.
func (c *readCache) wrote(path, op string, params url.Values) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "machines", "nodes":
		c.wroteMachine(parts, op, params)
	case "tags":
		if op != "update_nodes" {
			c.drop("tags/?op=")
			return
		}
		for _, id := range append(params["add"], params["remove"]...) {
			c.touch(id, partTags)
		}
	case "subnets", "fabrics", "vlans", "spaces", "ipranges", "static-routes":
		c.drop("subnets/?op=")
	case "domains":
		c.drop("domains/?op=")
	}
}

// wroteMachine is wrote for machines/... and nodes/... (path split at /).
func (c *readCache) wroteMachine(parts []string, op string, params url.Values) {
	if len(parts) > 1 {
		id, sub := parts[1], ""
		if len(parts) > 2 {
			sub = parts[2]
		}
		c.touch(id, partOf(sub, op))
		if op == "commission" {
			c.drop("devices:" + id)
		}
		if parts[0] == "machines" && (op == "" || op == "power_parameters") && params.Has("power_type") {
			c.drop("machines/?op=power_parameters")
		}
	}
	for _, id := range params["system_id"] { // allocate
		c.drop(id)
	}
	if op == "clone" { // the destinations' storage (interfaces too when asked)
		for _, id := range params["destinations"] {
			c.touch(id, partStorage|partInterfaces)
		}
	}
}

// drop forgets a machine, a list or a machine's devices ("devices:" + ID)
// and notes when, so that a read the write overlapped is not kept. The
// caller holds c.mu.
func (c *readCache) drop(key string) {
	c.dropped[key] = c.epoch
	delete(c.machines, key)
	delete(c.lists, key)
	if id, ok := strings.CutPrefix(key, "devices:"); ok {
		delete(c.devices, id)
	}
}

// touch marks part p of machine id written (0: the whole machine). The
// caller holds c.mu.
func (c *readCache) touch(id string, p part) {
	if p == 0 {
		c.drop(id)
		return
	}
	t := c.touched[id]
	for k := range t {
		if p&(1<<k) != 0 {
			t[k] = c.epoch
		}
	}
	c.touched[id] = t
	if e, ok := c.machines[id]; ok {
		e.stale |= p
		c.machines[id] = e
	}
}
