package server

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
)

// TestReadyCheckTTLBounds: readyCheckTTL is a duration from 100ms to
// api.MaxReadyTTL; unset leaves the API's default (0).
func TestReadyCheckTTLBounds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"", 0, ""}, {"2s", 2 * time.Second, ""}, {"5m", 5 * time.Minute, ""},
		{"50ms", 0, "from 100ms to 5m0s"}, {"6m", 0, "from 100ms to 5m0s"}, {"soon", 0, "want a duration"}, {"-1s", 0, "want a duration"},
	} {
		var cfg api.Config
		err := Config{ReadyCheckTTL: c.in}.readyCheck(&cfg)
		switch {
		case c.err == "" && (err != nil || cfg.ReadyTTL != c.want):
			t.Errorf("readyCheckTTL %q: %v, %v; want %v", c.in, cfg.ReadyTTL, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "readyCheckTTL")):
			t.Errorf("readyCheckTTL %q: error %v; want one saying %q", c.in, err, c.err)
		}
	}
}
