package design

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
	}{
		{"10g", Size{Bytes: 10e9}},
		{"512m", Size{Bytes: 512e6}},
		{"1t", Size{Bytes: 1e12}},
		{"1.5g", Size{Bytes: 1.5e9}},
		{"10gi", Size{Bytes: 10 << 30}},
		{"512mi", Size{Bytes: 512 << 20}},
		{"1ti", Size{Bytes: 1 << 40}},
		{"4k", Size{Bytes: 4000}},
		{"10G", Size{Bytes: 10e9}},
		{"512Mi", Size{Bytes: 512 << 20}},
		{" 10g ", Size{Bytes: 10e9}},
		{"25%", Size{Percent: 25}},
		{"100%", Size{Percent: 100}},
		{"0.5%", Size{Percent: 0.5}},
		{">20g", Size{Bytes: 20e9, AtLeast: true}},
		{"> 20gi", Size{Bytes: 20 << 30, AtLeast: true}},
		{">10%", Size{Percent: 10, AtLeast: true}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if err != nil {
				t.Fatalf("ParseSize(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseSize(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseSizeErrors(t *testing.T) {
	for _, in := range []string{
		"", " ", "abc", "g", "0g", "0", "-1g", "-5%", "0%", "101%", "100.5%", "10x", "10gb", "10 g g",
		">", ">>20g", "20g>", "%", "nan%", "inf%", "NaNg", "1e3g", "99999999999p",
		"0.5b", // rounds to no bytes at all
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParseSize(in)
			if err == nil {
				t.Fatalf("ParseSize(%q) = %+v, want an error", in, got)
			}
			if got != (Size{}) {
				t.Errorf("ParseSize(%q) returned %+v with its error, want the zero Size", in, got)
			}
		})
	}
}
