package drivers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

func TestParseSettings(t *testing.T) {
	var d time.Duration
	n := 3
	parsers := map[string]func(string) error{"wait": drivers.DurationSetting(&d), "retries": drivers.IntSetting(&n, 0, 5)}
	if err := drivers.ParseSettings("x", map[string]string{"wait": " 2s ", "retries": "4"}, parsers); err != nil || d != 2*time.Second || n != 4 {
		t.Fatalf("good settings: %v %v %d", err, d, n)
	}
	for _, bad := range []map[string]string{{"wait": "-1s"}, {"retries": "6"}, {"nope": "1"}} {
		err := drivers.ParseSettings("x", bad, parsers)
		if drivers.Classify(err) != drivers.Permanent || !strings.HasPrefix(err.Error(), "permanent: x: ") {
			t.Errorf("%v: %v, want a permanent error naming the driver", bad, err)
		}
	}
	if err := drivers.ParseSettings("x", map[string]string{"nope": "1"}, parsers); !strings.Contains(err.Error(), "known: retries, wait") {
		t.Errorf("unknown setting: %v", err)
	}
}
