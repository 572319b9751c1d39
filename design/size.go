package design

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is a parsed storage size: a fixed byte count, a percentage of the
// device or volume group, or "at least N, then all that is left" (AtLeast).
type Size struct {
	Bytes   int64
	Percent float64 // 0 < Percent <= 100 for percentage sizes
	AtLeast bool
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15,
	"ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40, "pi": 1 << 50,
}

// ParseSize parses sizes as the schema writes them: 10g, 512m, 1t (powers
// of ten), 10gi, 512mi (powers of two), 25% (of the device or volume group)
// and >20g (at least 20g, then the rest).
func ParseSize(s string) (Size, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	var sz Size
	if rest, ok := strings.CutPrefix(in, ">"); ok {
		sz.AtLeast = true
		in = strings.TrimSpace(rest)
	}
	if num, ok := strings.CutSuffix(in, "%"); ok {
		p, err := strconv.ParseFloat(num, 64)
		if err != nil || p <= 0 || p > 100 || math.IsNaN(p) {
			return Size{}, fmt.Errorf("size %q: a percentage must be a number in (0, 100]", s)
		}
		sz.Percent = p
		return sz, nil
	}
	i := strings.IndexFunc(in, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := in, ""
	if i >= 0 {
		num, unit = in[:i], in[i:]
	}
	mult, ok := sizeUnits[unit]
	n, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || num == "" || n <= 0 || math.IsInf(n*mult, 0) || n*mult > math.MaxInt64/2 {
		return Size{}, fmt.Errorf("size %q does not parse: write a positive number and a unit, like 10g, 512mi, 25%% or >20g", s)
	}
	sz.Bytes = int64(n * mult)
	if sz.Bytes < 1 {
		return Size{}, fmt.Errorf("size %q is less than one byte", s)
	}
	return sz, nil
}
