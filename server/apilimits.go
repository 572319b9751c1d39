package server

import (
	"fmt"

	"github.com/slipway-dev/slipway/api"
)

// apiLimits sets the control API's stream, audit and connection limits
// from the file's (unset: the API's defaults).
func (c Config) apiLimits(cfg *api.Config) error {
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
	if err := c.checkConnsPerSource(); err != nil {
		return err
	}
	cfg.ConnsPerSource = c.ConnsPerSource
	return nil
}

// checkConnsPerSource checks the per-source connection caps (the
// introspection one is checked here too: serve reads both).
func (c Config) checkConnsPerSource() error {
	for _, n := range []struct {
		name string
		v    int
	}{{"connsPerSource", c.ConnsPerSource}, {"introspectionConnsPerSource", c.IntrospectionConnsPerSource}} {
		if n.v < -1 {
			return fmt.Errorf("config %s %d: want a number of connections, 1 or more (0: the default; -1: no cap)", n.name, n.v)
		}
	}
	return nil
}
