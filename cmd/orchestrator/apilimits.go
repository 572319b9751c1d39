package main

import (
	"fmt"

	"github.com/slipway-dev/slipway/api"
)

// apiLimits sets the control API's stream and audit limits from the
// file's (unset: the API's defaults).
func (c engineConfig) apiLimits(cfg *api.Config) error {
	var err error
	if cfg.StreamMaxLifetime, err = duration("eventStreamMaxLifetime", c.EventStreamMaxLifetime); err != nil {
		return err
	}
	if cfg.StreamRecheck, err = duration("eventStreamRecheck", c.EventStreamRecheck); err != nil {
		return err
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"auditRefusalsPerAddress", c.AuditRefusalsPerAddress}, {"auditRefusalsTotal", c.AuditRefusalsTotal}} {
		if n.v < 0 {
			return fmt.Errorf("config %s %d: want a number of records a minute, 1 or more (0: the default)", n.name, n.v)
		}
	}
	cfg.AuditRefusalsPerAddress, cfg.AuditRefusalsTotal = c.AuditRefusalsPerAddress, c.AuditRefusalsTotal
	return nil
}
