package siteregistry

import (
	"strings"
	"testing"
)

func TestParseRoCECSV(t *testing.T) {
	items, err := ParseRoCECSV(strings.NewReader("\ufeffinterface, hostname,ipv4_cidr\ngpu0,gpu-1,10.200.0.0/31\n gpu1 ,gpu-1, 10.200.0.2/31\n"))
	if err != nil || len(items) != 2 || items[1] != (RoCEItem{"gpu-1", "gpu1", "10.200.0.2/31"}) {
		t.Fatalf("%+v %v", items, err)
	}
	for _, c := range []struct{ name, in, want string }{
		{"no header", "", "the header"},
		{"unknown column", "hostname,interface,ip\n", `header column "ip"`},
		{"a column twice", "hostname,hostname,ipv4_cidr\n", "once"},
		{"no rows", "hostname,interface,ipv4_cidr\n", "no assignments"},
		{"short row", "hostname,interface,ipv4_cidr\ngpu-1,gpu0\n", "line 2"},
		{"too big", "hostname,interface,ipv4_cidr\n" + strings.Repeat(strings.Repeat("h", 300)+",i,10.0.0.0/31\n", MaxRoCEItems-1), "over"},
		{"too many", "hostname,interface,ipv4_cidr\n" + strings.Repeat("h,i,c\n", MaxRoCEItems+1), "more than"},
	} {
		if _, err := ParseRoCECSV(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func FuzzParseRoCECSV(f *testing.F) {
	for _, s := range []string{"hostname,interface,ipv4_cidr\nh,i,10.0.0.0/31\n", "a,b\n", "\"", "hostname,interface,ipv4_cidr\n\"x\ny\",i,c\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		items, err := ParseRoCECSV(strings.NewReader(s))
		if err == nil && (len(items) == 0 || len(items) > MaxRoCEItems) {
			t.Fatalf("%d items without an error", len(items))
		}
	})
}
