package maas

import "testing"

// BenchmarkRenderMachine is one machine's JSON as the listing cache
// renders it: from the field table (appendMachine), and as before, a map
// encoded by appendJSON.
func BenchmarkRenderMachine(b *testing.B) {
	s := benchSite(b, 200)
	m := sortedMachines(s.machines)[100]
	s.mu.Lock()
	defer s.mu.Unlock()
	b.Run("table", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.appendMachine(make([]byte, 0, 16<<10), m, domainMark); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("listed", func(b *testing.B) { // what the listing cache keeps: the bytes a render allocates
		b.ReportAllocs()
		for b.Loop() {
			if !s.renderListed(m, 0, true) {
				b.Fatal("render failed")
			}
		}
		b.ReportMetric(float64(len(m.rendered.json)+len(m.rendered.tail)), "json-bytes")
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := s.renderMachine(m)
			r["domain"] = domainMark
			if _, err := appendJSON(make([]byte, 0, 16<<10), r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
