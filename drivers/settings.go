package drivers

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ParseSettings reads a driver's Config.Settings: each key's value
// (trimmed) goes to that key's parser. An unknown key, or a value its
// parser refuses, is a Permanent error naming the driver, the setting and
// the settings it knows.
func ParseSettings(driver string, settings map[string]string, parsers map[string]func(v string) error) error {
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		parse, ok := parsers[k]
		if !ok {
			return Errorf(Permanent, "%s: unknown setting %q (known: %s)", driver, k, strings.Join(slices.Sorted(maps.Keys(parsers)), ", "))
		}
		if err := parse(strings.TrimSpace(settings[k])); err != nil {
			return Errorf(Permanent, "%s: setting %s: %v", driver, k, err)
		}
	}
	return nil
}

// DurationSetting is a ParseSettings parser of a positive duration into d.
func DurationSetting(d *time.Duration) func(string) error {
	return func(v string) error {
		x, err := time.ParseDuration(v)
		if err != nil || x <= 0 {
			return fmt.Errorf("%q is not a positive duration (e.g. 2s, 500ms)", v)
		}
		*d = x
		return nil
	}
}

// IntSetting is a ParseSettings parser of an integer from lo to hi into n.
func IntSetting(n *int, lo, hi int) func(string) error {
	return func(v string) error {
		x, err := strconv.Atoi(v)
		if err != nil || x < lo || x > hi {
			return fmt.Errorf("%q is not an integer from %d to %d", v, lo, hi)
		}
		*n = x
		return nil
	}
}
