package design_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
)

// TestDecodeSharedSharesParts: a revision decoded by DecodeShared is the same design
// (its canonical JSON is the stored one), each node's hardware is its
// hardware profile's spec, and nodes with equal interfaces, storage and
// owner data hold one copy of each (#39: the engine holds the decoded
// design for the whole run).
func TestDecodeSharedSharesParts(t *testing.T) {
	built := designtest.Example(t)
	body, _, err := built.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	d, err := design.DecodeShared(body)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, body) {
		t.Fatal("the decoded revision's canonical JSON differs from the stored one")
	}
	shared := 0
	first := map[string]*design.Node{} // by the JSON of its interfaces, storage and owner data
	for _, name := range d.NodeNames() {
		n := d.Nodes[name]
		if hp := d.HardwareProfiles[n.Spec.HardwareProfile]; hp != nil && n.Spec.Hardware != &hp.Spec {
			t.Errorf("node %s: its hardware is a copy of hardware profile %s's spec, not the spec", name, hp.Metadata.Name)
		}
		k := partsKey(t, n)
		f := first[k]
		if f == nil {
			first[k] = n
			continue
		}
		shared++
		for what, pair := range map[string][2]any{
			"interfaces":           {f.Spec.Interfaces, n.Spec.Interfaces},
			"storage devices":      {f.Spec.Storage.Devices, n.Spec.Storage.Devices},
			"storage volume group": {f.Spec.Storage.VolumeGroups, n.Spec.Storage.VolumeGroups},
			"owner data":           {f.Spec.OwnerData, n.Spec.OwnerData},
		} {
			a, b := reflect.ValueOf(pair[0]), reflect.ValueOf(pair[1])
			if a.Len() > 0 && a.UnsafePointer() != b.UnsafePointer() {
				t.Errorf("nodes %s and %s: equal %s, two copies", f.Metadata.Name, name, what)
			}
		}
	}
	if shared == 0 {
		t.Fatal("the example has no two nodes with equal interfaces, storage and owner data: the test shows nothing")
	}
}

func partsKey(t *testing.T, n *design.Node) string {
	t.Helper()
	b, err := json.Marshal([]any{n.Spec.Interfaces, n.Spec.Storage, n.Spec.OwnerData})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDecodeSharedOneDesignPerRevision: readers of the same revision
// (serve's engine and its control API) get one design, not a copy each;
// another revision gets its own.
func TestDecodeSharedOneDesignPerRevision(t *testing.T) {
	body, _, err := designtest.Example(t).Canonical()
	if err != nil {
		t.Fatal(err)
	}
	a, err := design.DecodeShared(body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := design.DecodeShared(slices.Clone(body))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two readers of one revision hold two decoded designs")
	}
	other, err := design.DecodeShared(bytes.Replace(body, []byte(`"r01-gpu01"`), []byte(`"r01-gpu91"`), 1))
	if err != nil {
		t.Fatal(err)
	}
	if other == a || other.Nodes["r01-gpu91"] == nil {
		t.Fatal("another revision was answered with the first's design")
	}
}

// FuzzDecodeShared: whatever a stored revision holds, DecodeShared reads
// the design DecodeRevision reads (same error, or the same canonical
// JSON): sharing changes where the parts are, never what they say.
func FuzzDecodeShared(f *testing.F) {
	body, _, err := designtest.Example(f).Canonical()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body)
	f.Add([]byte(`{"nodes":{"a":{"metadata":{"name":"a"},"spec":{"tags":["x"],"owner_data":{"k":"v"}}},"b":{"metadata":{"name":"b"},"spec":{"tags":["x"],"owner_data":{"k":"v"}}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		own, errOwn := design.DecodeRevision(b)
		shared, errShared := design.DecodeShared(b)
		if (errOwn == nil) != (errShared == nil) {
			t.Fatalf("DecodeRevision: %v; DecodeShared: %v", errOwn, errShared)
		}
		if errOwn != nil {
			return
		}
		a, _, errA := own.Canonical()
		c, _, errC := shared.Canonical()
		if (errA == nil) != (errC == nil) || !bytes.Equal(a, c) {
			t.Fatalf("the shared design reads otherwise: %v, %v\n%s\n%s", errA, errC, a, c)
		}
	})
}
