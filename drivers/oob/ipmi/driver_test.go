package ipmi

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

func TestSettings(t *testing.T) {
	d, err := NewDriver(drivers.Config{})
	if err != nil || d.s != defaults || cap(d.sem) != 32 {
		t.Fatalf("defaults: %+v %v", d, err)
	}
	d, err = NewDriver(drivers.Config{Settings: map[string]string{
		SettingTimeout: "750ms", SettingRetries: "0", SettingBackoff: "10ms", SettingMaxConcurrent: "4",
		SettingPollInterval: "2s", SettingPowerWait: "1m", SettingCycleTimeout: "10m",
	}})
	want := settings{policy: policy{timeout: 750 * time.Millisecond, retries: 0, backoff: 10 * time.Millisecond},
		maxConcurrent: 4, pollInterval: 2 * time.Second, powerWait: time.Minute, cycleTimeout: 10 * time.Minute}
	if err != nil || d.s != want || cap(d.sem) != 4 {
		t.Errorf("settings: %+v %v", d.s, err)
	}
	for k, v := range map[string]string{
		SettingTimeout: "2", SettingRetries: "11", SettingMaxConcurrent: "0", SettingBackoff: "-1s", "speed": "fast",
	} {
		_, err := New(drivers.Config{Settings: map[string]string{k: v}})
		if err == nil || drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want a permanent error naming the setting", k, v, err)
		}
	}
}

func TestBackoff(t *testing.T) {
	p := policy{timeout: time.Second, backoff: 250 * time.Millisecond}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, p.pause(n))
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pauses %v, want %v", got, want)
		}
	}
}
