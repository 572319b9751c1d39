package server

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/design"
)

// ByteSize is a flag or config value holding a byte count, written as a
// number of bytes or with a unit: 8MiB, 8mi, 512KiB, 16M (powers of ten).
type ByteSize int64

func ParseByteSize(s string) (ByteSize, error) {
	in := strings.TrimSpace(s)
	if n, err := strconv.ParseInt(in, 10, 64); err == nil && n > 0 {
		return ByteSize(n), nil
	}
	low := strings.ToLower(in)
	if strings.HasSuffix(low, "ib") {
		low = strings.TrimSuffix(low, "b")
	}
	sz, err := design.ParseSize(low)
	if err != nil || sz.Bytes == 0 {
		return 0, fmt.Errorf("size %q: write a positive number of bytes, or one with a unit like 8MiB or 512KiB", s)
	}
	return ByteSize(sz.Bytes), nil
}

func (b *ByteSize) String() string { return FormatBytes(int64(*b)) }

func (b *ByteSize) Set(s string) error {
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

func (b *ByteSize) Type() string { return "size" }

// UnmarshalYAML reads a size from the config file: 8MiB or a number of
// bytes; an error names the line.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if err := b.Set(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// FormatBytes writes n with the largest binary unit that divides it.
func FormatBytes(n int64) string {
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
