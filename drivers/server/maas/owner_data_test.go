package maas

import (
	"maps"
	"testing"

	segjson "github.com/segmentio/encoding/json"
)

// TestOwnerDataDecode: a machine's owner data decodes to the entries
// MAAS answered, as a plain map[string]string decodes them (empty and
// null: no map), and what such a map refuses it refuses.
func TestOwnerDataDecode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
		err  bool
	}{
		{`{"owner_data": {"slipway_node": "n1", "slipway_instance": "i", "x": ""}}`, map[string]string{OwnerDataNode: "n1", OwnerDataInstance: "i", "x": ""}, false},
		{`{"owner_data": {}}`, nil, false},
		{`{"owner_data": null}`, nil, false},
		{`{}`, nil, false},
		{`{"owner_data": {"a": 1}}`, nil, true},
		{`{"owner_data": ["a"]}`, nil, true},
	} {
		var m mMachineState
		err := segjson.Unmarshal([]byte(c.in), &m)
		if (err != nil) != c.err {
			t.Errorf("%s: error %v, want one: %v", c.in, err, c.err)
			continue
		}
		if !c.err && (!maps.Equal(m.OwnerData, c.want) || (c.want == nil) != (m.OwnerData == nil)) {
			t.Errorf("%s: owner data %#v, want %#v", c.in, m.OwnerData, c.want)
		}
	}
}

// FuzzOwnerData: whatever the answer, the owner data decodes as a plain
// map[string]string does (the decoder it replaces): the same entries, an
// error exactly when that refuses it.
func FuzzOwnerData(f *testing.F) {
	for _, s := range []string{`{"slipway_node":"n1","slipway_instance":"i"}`, `{}`, `null`, `{"a":1}`, `{"a":"\u00e9\n","a":"b"}`, `[]`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		var plain map[string]string
		perr := segjson.Unmarshal(b, &plain)
		var got ownerData
		err := segjson.Unmarshal(b, &got)
		if (err != nil) != (perr != nil) {
			t.Fatalf("%q: error %v, a plain map's %v", b, err, perr)
		}
		if err == nil && !maps.Equal(got, plain) {
			t.Fatalf("%q: %v, a plain map %v", b, got, plain)
		}
	})
}
