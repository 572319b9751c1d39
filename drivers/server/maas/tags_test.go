package maas

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// TestTagsBatchedAcrossNodes: the platform steps of nodes that come one
// after another (30 ms apart, as the configure stage lets them through;
// each request done long before the next node comes) tag their machines
// in one update_nodes request per tag, counted by the lab; every machine
// carries the design's tags in the lab's own answer. Without the
// coalescing window each node's tags went in requests of their own. The
// calls hold slots of a limit as the engine's calls do, lent while they
// wait (drivers.WithWaiting, one lend at a time: a node's tags sent by
// goroutines of their own, each lending, held more slots than it had and
// deadlocked the engine). The window is an hour: the batch goes when the
// last node on its way (its networking applied) joins it, not when the
// window ends (the test's 30 s context would end first).
func TestTagsBatchedAcrossNodes(t *testing.T) {
	t.Parallel()
	d := genDesign(t, 6)
	l, drv := cfgLab(t, d)
	drv.tagWindow = time.Hour
	nodes := networkedNodes(t, l, drv, d) // on their way to the platform step
	tags := map[string]bool{}
	before := count(l, "POST /tags/{tag}/?op=update_nodes")
	slots := engineSlots(2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r drivers.Result
			err := slots(ctx, func(ctx context.Context) (err error) { r, err = drv.ApplyPlatform(ctx, n); return err })
			if err != nil || r.Status != drivers.StatusDone {
				t.Errorf("ApplyPlatform %s: %+v %v", n.Name, r, err)
			}
		}()
		time.Sleep(30 * time.Millisecond)
	}
	wg.Wait()
	for _, n := range nodes {
		m := cfgMachine(t, drv, n.MachineID)
		want := slices.Clone(n.Tags)
		if opts := kernelOpts(n.Platform.KernelParams); opts != "" {
			want = append(want, kernelTag(opts))
		}
		for _, tag := range want {
			tags[tag] = true
			if !slices.Contains(m.TagNames, tag) {
				t.Errorf("machine %s of %s: tags %v in the lab, want %s", n.MachineID, n.Name, m.TagNames, tag)
			}
		}
	}
	if got := count(l, "POST /tags/{tag}/?op=update_nodes") - before; got != len(tags) {
		t.Errorf("%d update_nodes requests for %d nodes, want one per tag (%d: %v)", got, len(nodes), len(tags), slices.Sorted(maps.Keys(tags)))
	}
}

// engineSlots runs calls under a limit of n slots as the engine's
// callServer does: a call holds a slot, and its context lends it while
// the driver waits (give it back, take one again when the wait ends).
func engineSlots(n int) func(context.Context, func(context.Context) error) error {
	sem := make(chan struct{}, n)
	return func(ctx context.Context, fn func(context.Context) error) error {
		var mu sync.Mutex
		held := false
		take := func() error {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			held = true
			mu.Unlock()
			return nil
		}
		give := func() {
			mu.Lock()
			defer mu.Unlock()
			if held {
				<-sem
				held = false
			}
		}
		if err := take(); err != nil {
			return err
		}
		defer give()
		return fn(drivers.WithWaiting(ctx, func() func() {
			give()
			return func() { _ = take() }
		}))
	}
}

// TestTagWindowAlone: a node whose platform step comes while no other
// node is on its way to its tags sends them at once, whatever the
// window (an hour here: before, the step waited it out and the test's
// 30 s context ended it); the lab's answer carries the tags.
func TestTagWindowAlone(t *testing.T) {
	t.Parallel()
	d := genDesign(t, 1)
	l, drv := cfgLab(t, d)
	drv.tagWindow = time.Hour
	n := driverspec.Node(d, d.Nodes[slices.Sorted(maps.Keys(d.Nodes))[0]], "")
	pxeBoot(l.Machine(n.Name))
	n.MachineID = identify(t, drv, n).MachineID
	mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return drv.Commission(ctx, n.NodeRef) })
	cfgSubnets(t, drv, driverspec.Site(d))
	mustDone(t, "ApplyNetworking", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyNetworking(ctx, n) })
	before := count(l, "POST /tags/{tag}/?op=update_nodes")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if r, err := drv.ApplyPlatform(ctx, n); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("ApplyPlatform %s: %+v %v", n.Name, r, err)
	}
	m := cfgMachine(t, drv, n.MachineID)
	for _, tag := range n.Tags {
		if !slices.Contains(m.TagNames, tag) {
			t.Errorf("machine %s: tags %v in the lab, want %s", n.MachineID, m.TagNames, tag)
		}
	}
	if got := count(l, "POST /tags/{tag}/?op=update_nodes") - before; got == 0 || len(n.Tags) == 0 {
		t.Errorf("%d update_nodes requests for tags %v: the test needs a node with tags", got, n.Tags)
	}
}

// TestTagWindowWaitsForNodesOnTheirWay: while another node is on its way
// (its networking applied, its platform step not yet come), a node's
// batch waits the window out; the other node, coming within the window,
// joins it: one update_nodes per tag, counted by the lab.
func TestTagWindowWaitsForNodesOnTheirWay(t *testing.T) {
	t.Parallel()
	d := genDesign(t, 2)
	l, drv := cfgLab(t, d)
	drv.tagWindow = time.Hour
	var nodes []drivers.Node
	for _, name := range slices.Sorted(maps.Keys(d.Nodes)) {
		n := driverspec.Node(d, d.Nodes[name], "")
		pxeBoot(l.Machine(name))
		n.MachineID = identify(t, drv, n).MachineID
		mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return drv.Commission(ctx, n.NodeRef) })
		nodes = append(nodes, n)
	}
	cfgSubnets(t, drv, driverspec.Site(d))
	for _, n := range nodes {
		mustDone(t, "ApplyNetworking", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyNetworking(ctx, n) })
	}
	before := count(l, "POST /tags/{tag}/?op=update_nodes")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() { _, err := drv.ApplyPlatform(ctx, nodes[0]); first <- err }()
	select {
	case err := <-first:
		t.Fatalf("the first node's platform step ended (%v) while the second was on its way", err)
	case <-time.After(300 * time.Millisecond):
	}
	if r, err := drv.ApplyPlatform(ctx, nodes[1]); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("ApplyPlatform %s: %+v %v", nodes[1].Name, r, err)
	}
	if err := <-first; err != nil {
		t.Fatalf("ApplyPlatform %s: %v", nodes[0].Name, err)
	}
	tags := map[string]bool{}
	for _, n := range nodes {
		for _, tag := range n.Tags {
			tags[tag] = true
		}
		if opts := kernelOpts(n.Platform.KernelParams); opts != "" {
			tags[kernelTag(opts)] = true
		}
	}
	if got := count(l, "POST /tags/{tag}/?op=update_nodes") - before; got != len(tags) {
		t.Errorf("%d update_nodes requests for 2 nodes, want one per tag (%d)", got, len(tags))
	}
}

// TestKnownTagsBuiltOncePerRead: the nodes' platform steps share the tag
// list's map while the list is cached (before, each decoded the list
// again: a map of its own each time); a tag created since is in the next
// read's map, as the lab holds it.
func TestKnownTagsBuiltOncePerRead(t *testing.T) {
	t.Parallel()
	_, drv := cfgLab(t, genDesign(t, 1))
	ctx := t.Context()
	a, err := drv.knownTags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := drv.knownTags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
		t.Error("two reads of the cached tag list built two maps")
	}
	if err := drv.c.call(ctx, http.MethodPost, "tags/", "", url.Values{"name": {"built-once"}}, nil); err != nil {
		t.Fatal(err)
	}
	c, err := drv.knownTags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c["built-once"]; !ok {
		t.Errorf("the tag list after a tag was created: %v, want built-once in it", slices.Sorted(maps.Keys(c)))
	}
}
