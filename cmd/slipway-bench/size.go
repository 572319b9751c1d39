package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/design"
)

// byteSize is a flag holding a byte count, written as a number of bytes
// or with a unit: 8MiB, 8mi, 512KiB, 16M (powers of ten); the
// orchestrator's size flags read the same forms.
type byteSize int64

func (b *byteSize) String() string {
	n := int64(*b)
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

func (b *byteSize) Set(s string) error {
	in := strings.TrimSpace(s)
	if n, err := strconv.ParseInt(in, 10, 64); err == nil && n > 0 {
		*b = byteSize(n)
		return nil
	}
	low := strings.ToLower(in)
	if strings.HasSuffix(low, "ib") {
		low = strings.TrimSuffix(low, "b")
	}
	sz, err := design.ParseSize(low)
	if err != nil || sz.Bytes == 0 {
		return fmt.Errorf("size %q: write a positive number of bytes, or one with a unit like 8MiB or 512KiB", s)
	}
	*b = byteSize(sz.Bytes)
	return nil
}

func (b *byteSize) Type() string { return "size" }
