package main

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/design"
)

// byteSize is a flag or config value holding a byte count, written as a
// number of bytes or with a unit: 8MiB, 8mi, 512KiB, 16M (powers of ten).
type byteSize int64

func parseByteSize(s string) (byteSize, error) {
	in := strings.TrimSpace(s)
	if n, err := strconv.ParseInt(in, 10, 64); err == nil && n > 0 {
		return byteSize(n), nil
	}
	low := strings.ToLower(in)
	if strings.HasSuffix(low, "ib") {
		low = strings.TrimSuffix(low, "b")
	}
	sz, err := design.ParseSize(low)
	if err != nil || sz.Bytes == 0 {
		return 0, fmt.Errorf("size %q: write a positive number of bytes, or one with a unit like 8MiB or 512KiB", s)
	}
	return byteSize(sz.Bytes), nil
}

func (b *byteSize) String() string { return formatBytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

func (b *byteSize) Type() string { return "size" }

// UnmarshalYAML reads a size from the config file: 8MiB or a number of
// bytes; an error names the line.
func (b *byteSize) UnmarshalYAML(n *yaml.Node) error {
	if err := b.Set(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// formatBytes writes n with the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return strconv.FormatInt(n, 10)
}
