package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slipway-dev/slipway/orchestrator"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// OpenReader opens the state for the API without starting the engine:
// the stored records, designs, tokens and secrets. Without a secret key
// the secrets' names can be listed and deleted, not stored; createKey
// makes the key file when there is none (and says so on o.Stderr).
func OpenReader(c Config, o Options, createKey bool) (*Env, error) {
	st, err := bolt.Open(c.State, bolt.Options{})
	if err != nil {
		return nil, err
	}
	env := &Env{store: st, metrics: prometheus.NewRegistry(), close: func() { st.Close() }}
	if env.secrets, err = o.readerSecrets(c, st, createKey); err != nil {
		st.Close()
		return nil, err
	}
	if env.engine, err = orchestrator.New(orchestrator.Config{Store: st, Log: o.Log}); err != nil {
		st.Close()
		return nil, err
	}
	return env, nil
}

// readerSecrets is the secret store of an in-process API: with the key
// when there is one (or createKey makes it, which is said on stderr),
// else keyless.
func (o Options) readerSecrets(c Config, st statestore.Store, createKey bool) (*secretstore.Store, error) {
	_, statErr := os.Stat(c.keyFile())
	sec, _, err := c.secrets(st, createKey)
	switch {
	case err != nil:
		return nil, err
	case sec == nil:
		return secretstore.New(st, nil)
	case createKey && errors.Is(statErr, fs.ErrNotExist) && os.Getenv(secretstore.KeyEnv) == "":
		fmt.Fprintf(o.Stderr, "created the secret key file %s: keep it, and a copy of it in a safe place; without it the stored secrets can't be decrypted\n", c.keyFile())
	}
	return sec, nil
}
