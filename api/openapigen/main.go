// Command openapigen writes docs/openapi.json from the code: run it from
// the repository's root (`go run ./api/openapigen`, or `make contract`).
package main

import (
	"fmt"
	"os"

	"github.com/slipway-dev/slipway/api"
)

func main() {
	b, err := api.DocumentJSON()
	if err == nil {
		err = os.WriteFile(api.OpenAPIPath, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}
