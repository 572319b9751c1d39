package storedrec_test

import (
	"reflect"
	"testing"

	"github.com/slipway-dev/slipway/internal/storedrec"
)

// BenchmarkCodec encodes and decodes the records the engine writes and
// reads per node (every field set): a node checkpoint, a task result, an
// event and an inventory.
func BenchmarkCodec(b *testing.B) {
	for _, k := range fixtureKinds[:5] {
		kind := storedrec.Lookup(k.kind)
		v := k.value()
		raw, err := kind.Encode(v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("encode/"+k.file, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := kind.Encode(v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode/"+k.file, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := reflect.New(k.typ).Interface()
				if err := kind.Decode("k", raw, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
