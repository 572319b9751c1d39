package server

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
)

// TestAPILimits: serve's configuration sets the API's stream, audit and
// connection limits; unset keys leave the API's defaults; bad values are
// refused naming the key.
func TestAPILimits(t *testing.T) {
	var cfg api.Config
	c := Config{EventStreamMaxLifetime: "2m", EventStreamRecheck: "1s", AuditRefusalsPerAddress: 5, AuditRefusalsTotal: 9, ConnsPerSource: 7}
	if err := c.apiLimits(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.StreamMaxLifetime != 2*time.Minute || cfg.StreamRecheck != time.Second || cfg.AuditRefusalsPerAddress != 5 || cfg.AuditRefusalsTotal != 9 ||
		cfg.ConnsPerSource != 7 {
		t.Errorf("limits: %+v", cfg)
	}
	var unset api.Config
	if err := (Config{}).apiLimits(&unset); err != nil || unset.StreamMaxLifetime != 0 || unset.AuditRefusalsTotal != 0 {
		t.Errorf("unset: %+v %v (zero means the API's default)", unset, err)
	}
	for _, bad := range []Config{{EventStreamMaxLifetime: "forever"}, {EventStreamRecheck: "-1s"}, {AuditRefusalsTotal: -1},
		{ConnsPerSource: -2}, {IntrospectionConnsPerSource: -5}} {
		err := bad.apiLimits(&api.Config{})
		if err == nil || !(strings.Contains(err.Error(), "eventStream") || strings.Contains(err.Error(), "auditRefusals") ||
			strings.Contains(err.Error(), "onnsPerSource")) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
