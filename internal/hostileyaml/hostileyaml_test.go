package hostileyaml

import (
	"bytes"
	"errors"
	"io"
	"testing"

	yamlv3 "gopkg.in/yaml.v3"
)

// TestGenerate: every shape is about the size asked for and is YAML that
// yaml.v3 reads (at 64 KiB).
func TestGenerate(t *testing.T) {
	for _, shape := range Shapes() {
		for _, size := range []int{64 << 10, 1 << 20} {
			b, err := Generate(shape, size)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < size-8 || len(b) > size+2048 {
				t.Errorf("%s: %d bytes for %d", shape, len(b), size)
			}
			if size > 64<<10 {
				continue
			}
			dec := yamlv3.NewDecoder(bytes.NewReader(b))
			for {
				var n yamlv3.Node
				if err := dec.Decode(&n); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Errorf("%s: %v", shape, err)
					break
				}
			}
		}
	}
	if _, err := Generate("nope", 100); err == nil {
		t.Error("an unknown shape is an error")
	}
}
