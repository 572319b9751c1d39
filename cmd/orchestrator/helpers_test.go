package main

import (
	"context"
	"encoding/json"

	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/statestore"
	yamlv3 "gopkg.in/yaml.v3"
)

func nopLog() zerolog.Logger { return zerolog.Nop() }

func yamlUnmarshal(b []byte, v any) error { return yamlv3.Unmarshal(b, v) }

// currentDesign decodes the store's current revision.
func currentDesign(ctx context.Context, st statestore.Store) (*design.Design, error) {
	rev, err := st.Current(ctx)
	if err != nil {
		return nil, err
	}
	d := &design.Design{}
	return d, json.Unmarshal(rev.Design, d)
}
