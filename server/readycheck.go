package server

import (
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/api"
)

// readyCheck sets how long GET /readyz reuses its upstream checks from
// the file's readyCheckTTL (unset: api.DefaultReadyTTL).
func (c Config) readyCheck(cfg *api.Config) error {
	d, err := duration("readyCheckTTL", c.ReadyCheckTTL)
	if err != nil {
		return err
	}
	if d != 0 && (d < 100*time.Millisecond || d > api.MaxReadyTTL) {
		return fmt.Errorf("config readyCheckTTL %q: want a duration from 100ms to %s (unset: %s)", c.ReadyCheckTTL, api.MaxReadyTTL, api.DefaultReadyTTL)
	}
	cfg.ReadyTTL = d
	return nil
}
