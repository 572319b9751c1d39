// Command gendocs writes the documents generated from the code: the
// control API's OpenAPI document (docs/openapi.json) and its event
// stream's AsyncAPI document (docs/asyncapi.yaml). Run it from the
// repository's root: `go run ./cmd/gendocs` (or `make docs`). Tests fail
// when a committed document is not what the code generates.
package main

import (
	"fmt"
	"os"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/asyncapi"
)

func main() {
	docs := []struct {
		path string
		gen  func() ([]byte, error)
	}{
		{api.OpenAPIPath, api.DocumentJSON},
		{asyncapi.Path, asyncapi.YAML},
	}
	for _, d := range docs {
		b, err := d.gen()
		if err == nil {
			err = os.WriteFile(d.path, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "gendocs: %s: %v\n", d.path, err)
			os.Exit(1)
		}
	}
}
