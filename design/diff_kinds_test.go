package design_test

import (
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
)

// TestDiffCanonicalEveryKind: a first apply adds the objects of every
// kind the design holds (the canonical JSON's names and the diff's must
// agree: the snake_case rename left four kinds out of every diff).
func TestDiffCanonicalEveryKind(t *testing.T) {
	d := designtest.Example(t)
	body, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	df, err := design.DiffCanonical(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	for kind, n := range d.Counts() {
		if got := len(df.Kind(kind).Added); got != n {
			t.Errorf("%s: %d added, want %d", kind, got, n)
		}
	}
}
