package maas

import (
	"testing"
	"time"
)

// TestReadCacheFeed: the change feed keeps a machine's state answered
// past machineTTL only for a state-only look, only for reads begun after
// the chain's base, only while the chain's latest call is recent, never
// for a machine an answer named, and never past feedTTL after the read
// (the ordering rules of cache_feed.go).
func TestReadCacheFeed(t *testing.T) {
	c := newReadCache(5 * time.Second)
	now := time.Unix(1e9, 0)
	c.now = func() time.Time { return now }
	put := func(id string) {
		c.putMachines(c.begin(), []mMachine{{mMachineState: mMachineState{SystemID: id, Status: stReady}, Interfaces: []mInterface{{ID: 1}}}})
	}
	hit := func(id string, need part) bool { _, ok := c.machine(id, need); return ok }
	tick := func(d time.Duration) { now = now.Add(d) }

	put("old") // before any chain: not followed
	c.changed("", "10", nil, now, true)
	put("a")
	put("b")
	tick(time.Second)
	c.changed("10", "12", []string{"b"}, now, false)
	tick(5 * time.Second) // past machineTTL
	put("c")              // a put expires the reads older than machineTTL
	c.changed("12", "12", nil, now, false)
	switch {
	case !hit("a", 0):
		t.Error("a followed state read past machineTTL was not answered")
	case hit("a", partInterfaces):
		t.Error("the feed answered a read that needs the interfaces")
	case hit("b", 0):
		t.Error("a machine the feed named was answered")
	case hit("old", 0):
		t.Error("a read from before the chain's base was answered past machineTTL")
	}
	if e := c.machines["a"]; e.m.Interfaces != nil {
		t.Error("an expired followed read keeps more than its state")
	}
	// A read in flight when an answer names the machine is not kept.
	since := c.begin()
	c.changed("12", "13", []string{"d"}, now, false)
	c.putMachines(since, []mMachine{{mMachineState: mMachineState{SystemID: "d"}}})
	if hit("d", 0) {
		t.Error("a read overlapped by the feed naming it was kept")
	}
	// The chain's latest call older than machineTTL: nothing past it.
	tick(6 * time.Second)
	if hit("a", 0) {
		t.Error("followed by a feed whose latest call is older than machineTTL")
	}
	c.changed("13", "13", nil, now, false)
	if !hit("a", 0) {
		t.Error("not followed again once the chain read again")
	}
	// A call from another cursor (or a Reset) starts a new chain: the
	// reads before it are no longer followed.
	c.changed("7", "14", nil, now, false)
	if hit("a", 0) {
		t.Error("followed across a broken chain")
	}
	put("e")
	c.changed("14", "14", nil, now, false)
	tick(6 * time.Second)
	c.changed("14", "14", nil, now, false)
	if !hit("e", 0) {
		t.Error("a read after the new chain's base is not followed")
	}
	// Never past feedTTL after the state was read.
	for range 10 {
		tick(6 * time.Second)
		c.changed("14", "14", nil, now, false)
	}
	if hit("e", 0) {
		t.Error("followed past feedTTL")
	}
	put("f") // expires what aged out
	if _, ok := c.machines["e"]; ok {
		t.Error("an entry past feedTTL is still held")
	}
	// feedTTL 0: the feed keeps nothing.
	off := newReadCache(5 * time.Second)
	off.now, off.feedTTL = c.now, 0
	off.changed("", "1", nil, now, true)
	off.putMachines(off.begin(), []mMachine{{mMachineState: mMachineState{SystemID: "g"}}})
	off.changed("1", "1", nil, now, false)
	tick(6 * time.Second)
	off.changed("1", "1", nil, now, false)
	if _, ok := off.machine("g", 0); ok {
		t.Error("cacheFeedTTL=0 still follows")
	}
}
