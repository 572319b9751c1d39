// Command gen writes docs/asyncapi.yaml from the code: run it from the
// repository's root (`go run ./internal/asyncapi/gen`).
package main

import (
	"fmt"
	"os"

	"github.com/slipway-dev/slipway/internal/asyncapi"
)

func main() {
	b, err := asyncapi.YAML()
	if err == nil {
		err = os.WriteFile(asyncapi.Path, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "asyncapi:", err)
		os.Exit(1)
	}
}
