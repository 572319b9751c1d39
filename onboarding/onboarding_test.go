package onboarding_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/statestore/memory"
)

func TestCheck(t *testing.T) {
	ok := onboarding.Request{SiteID: "ms-1", ProfileID: "sp-1", SKUID: "dell-r650", Rows: []onboarding.Row{{Hostname: "r09-a", IPMIIP: "10.0.0.1"},
		{Hostname: "r09-b", IPMIIP: "fd00::2", Addresses: map[string]string{"mgmt": "10.1.0.2", "pxe": "dhcp"}}}}
	if err := ok.Check(); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	many := make([]onboarding.Row, onboarding.MaxRows+1)
	cases := map[string]struct {
		change func(*onboarding.Request)
		want   string
	}{
		"no site":       {func(r *onboarding.Request) { r.SiteID = "" }, "site_id is required"},
		"no sku":        {func(r *onboarding.Request) { r.SKUID = "" }, "sku_id"},
		"no profile":    {func(r *onboarding.Request) { r.ProfileID = "" }, "profile_id (a site profile of the site) is required"},
		"no rows":       {func(r *onboarding.Request) { r.Rows = nil }, "at least one"},
		"too many":      {func(r *onboarding.Request) { r.Rows = many }, "at most 500"},
		"bad hostname":  {func(r *onboarding.Request) { r.Rows[0].Hostname = "R09_A" }, "not a DNS label"},
		"dup hostname":  {func(r *onboarding.Request) { r.Rows[1].Hostname = "r09-a" }, "is also rows[0]"},
		"bad ip":        {func(r *onboarding.Request) { r.Rows[0].IPMIIP = "10.0.0" }, "not an IP address"},
		"dup ip":        {func(r *onboarding.Request) { r.Rows[1].IPMIIP = "10.0.0.1" }, "also rows[0]'s"},
		"bad address":   {func(r *onboarding.Request) { r.Rows[1].Addresses = map[string]string{"mgmt": "x"} }, "neither an IP address nor dhcp"},
		"zone in an ip": {func(r *onboarding.Request) { r.Rows[0].IPMIIP = "fe80::1%eth0" }, "not an IP address"},
	}
	for name, c := range cases {
		r := ok
		r.Rows = append([]onboarding.Row(nil), ok.Rows...)
		c.change(&r)
		err := r.Check()
		if !errors.Is(err, onboarding.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestNodeDoc(t *testing.T) {
	doc := onboarding.NodeDoc(onboarding.Row{Hostname: "r09-a", IPMIIP: "10.0.0.1", Rack: "r09",
		Addresses: map[string]string{"storage": "10.2.0.1", "mgmt": "10.1.0.1", "pxe": "10.3.0.1"}}, "east", "compute", "dell-r650", "pxe")
	spec := doc["spec"].(map[string]any)
	addr := spec["addressing"].([]any)
	if len(addr) != 3 || addr[0].(map[string]any)["address"] != "dhcp" || addr[1].(map[string]any)["network"] != "mgmt" {
		t.Errorf("addressing: %v", addr)
	}
	if spec["site"] != "east" || spec["hostProfile"] != "compute" || spec["hardwareProfile"] != "dell-r650" || spec["rack"] != "r09" ||
		spec["oob"].(map[string]any)["address"] != "10.0.0.1" {
		t.Errorf("spec: %v", spec)
	}
}

func TestStore(t *testing.T) {
	ctx := t.Context()
	st := onboarding.New(memory.New())
	a, err := st.NewRecord(onboarding.Request{SiteID: "ms-1", Rows: []onboarding.Row{{Hostname: "a"}}}, "admin")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := st.NewRecord(onboarding.Request{SiteID: "ms-1", Rows: []onboarding.Row{{Hostname: "b"}}}, "admin")
	b.Created = a.Created.Add(time.Second)
	for _, r := range []onboarding.Record{a, b} {
		if err := st.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.Get(ctx, a.ID)
	if err != nil || got.Nodes()[0] != "a" || got.By != "admin" {
		t.Fatalf("get: %+v %v", got, err)
	}
	all, err := st.List(ctx)
	if err != nil || len(all) != 2 || all[0].ID != b.ID {
		t.Fatalf("list, newest first: %+v %v", all, err)
	}
	for _, id := range []string{"ob-0000000000", "tk-1", strings.Repeat("ob-", 20)} {
		if _, err := st.Get(ctx, id); !errors.Is(err, onboarding.ErrNotFound) {
			t.Errorf("get %s: %v", id, err)
		}
	}
}
