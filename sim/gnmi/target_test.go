package gnmi

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const (
	user = "admin"
	pass = "lab-Password-42"
)

func start(t *testing.T, cfg Config, switches ...string) (*Target, gpb.GNMIClient) {
	t.Helper()
	cfg.Username, cfg.Password = user, pass
	tg, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	for _, sw := range switches {
		if err := tg.AddSwitch(sw, "Ethernet0", "Ethernet4"); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := grpc.NewClient(tg.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return tg, gpb.NewGNMIClient(conn)
}

func authed(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "username", user, "password", pass)
}

func mustPath(t *testing.T, s string) *gpb.Path {
	t.Helper()
	p, err := ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func jsonIETF(s string) *gpb.TypedValue {
	return &gpb.TypedValue{Value: &gpb.TypedValue_JsonIetfVal{JsonIetfVal: []byte(s)}}
}

func TestCredentialsRefused(t *testing.T) {
	tg, c := start(t, Config{}, "leaf1")
	ctx := metadata.AppendToOutgoingContext(t.Context(), "username", user, "password", "wrong")
	for name, call := range map[string]func() error{
		"Capabilities": func() error { _, err := c.Capabilities(ctx, &gpb.CapabilityRequest{}); return err },
		"Get": func() error {
			_, err := c.Get(ctx, &gpb.GetRequest{Path: []*gpb.Path{mustPath(t, "/interfaces")}})
			return err
		},
		"Subscribe": func() error {
			s, err := c.Subscribe(ctx)
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		},
		"no credentials": func() error { _, err := c.Capabilities(t.Context(), &gpb.CapabilityRequest{}); return err },
	} {
		if code := status.Code(call()); code != codes.Unauthenticated {
			t.Errorf("%s with wrong credentials: %s, want Unauthenticated", name, code)
		}
	}
	if tg.AuthFailures() != 4 || tg.Stats("leaf1").Gets != 0 {
		t.Errorf("auth failures %d, gets %d; want 4, 0", tg.AuthFailures(), tg.Stats("leaf1").Gets)
	}
}

func TestGetRendersJSONIETF(t *testing.T) {
	_, c := start(t, Config{}, "leaf1", "leaf2")
	ctx := authed(t.Context())
	req := &gpb.GetRequest{Prefix: &gpb.Path{Target: "leaf2"}, Encoding: gpb.Encoding_JSON_IETF,
		Path: []*gpb.Path{mustPath(t, "/interfaces/interface[name=Ethernet4]/ethernet")}}
	resp, err := c.Get(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got := string(resp.GetNotification()[0].GetUpdate()[0].GetVal().GetJsonIetfVal())
	if !strings.Contains(got, `"openconfig-vlan:switched-vlan"`) || !strings.Contains(got, `"access-vlan":1`) {
		t.Errorf("JSON_IETF of ethernet: %s", got)
	}
	// Two switches: a request naming none is refused, one naming an
	// unknown switch too.
	req.Prefix = nil
	if _, err := c.Get(ctx, req); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "target") {
		t.Errorf("Get naming no switch of two: %v", err)
	}
	req.Prefix = &gpb.Path{Target: "leaf9"}
	if _, err := c.Get(ctx, req); status.Code(err) != codes.NotFound {
		t.Errorf("Get naming an unknown switch: %v", err)
	}
	req.Prefix, req.Encoding = &gpb.Path{Target: "leaf1"}, gpb.Encoding_PROTO
	if _, err := c.Get(ctx, req); status.Code(err) != codes.Unimplemented {
		t.Errorf("Get in PROTO: %v", err)
	}
}

// TestSetIsCheckedAndAtomic: a Set the switch's rules refuse changes
// nothing, even its valid operations.
func TestSetIsCheckedAndAtomic(t *testing.T) {
	tg, c := start(t, Config{Strict: true, MaxVLAN: 2000}, "leaf1")
	ctx := authed(t.Context())
	set := func(updates map[string]string) error {
		req := &gpb.SetRequest{}
		for p, v := range updates {
			req.Update = append(req.Update, &gpb.Update{Path: mustPath(t, p), Val: jsonIETF(v)})
		}
		_, err := c.Set(ctx, req)
		return err
	}
	for name, tc := range map[string]struct {
		updates map[string]string
		words   string
	}{
		"vlan not created": {map[string]string{"/interfaces/interface[name=Ethernet0]/config/mtu": "9000",
			"/interfaces/interface[name=Ethernet0]/ethernet/switched-vlan/config/access-vlan": "10"}, "vlan 10 (interface Ethernet0) is not created"},
		"vlan out of range": {map[string]string{"/network-instances/network-instance[name=default]/vlans/vlan[vlan-id=3000]/config": `{"vlan-id":3000}`}, "vlan 3000 is outside"},
		"no such port":      {map[string]string{"/interfaces/interface[name=Ethernet99]/config/mtu": "1500"}, "does not exist on switch leaf1"},
		"bad mtu":           {map[string]string{"/interfaces/interface[name=Ethernet0]/config/mtu": "20000"}, "mtu 20000"},
		"bad mode":          {map[string]string{"/interfaces/interface[name=Ethernet0]/ethernet/switched-vlan/config/interface-mode": `"HYBRID"`}, "HYBRID"},
		"no such lag":       {map[string]string{"/interfaces/interface[name=Ethernet0]/ethernet/config/aggregate-id": `"po1"`}, "names no LAG"},
		"read only":         {map[string]string{"/interfaces/interface[name=Ethernet0]/state/oper-status": `"UP"`}, "read only"},
		"not json":          {map[string]string{"/interfaces/interface[name=Ethernet0]/config/mtu": "{"}, "not JSON"},
	} {
		err := set(tc.updates)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.words) {
			t.Errorf("%s: %v, want InvalidArgument saying %q", name, err, tc.words)
		}
	}
	p, _ := tg.Port("leaf1", "Ethernet0")
	if p.MTU != 0 || p.AccessVLAN != 1 || tg.Stats("leaf1").Sets != 0 {
		t.Errorf("refused Sets changed the switch: %+v, %+v", p, tg.Stats("leaf1"))
	}
	// Created first, in the same transaction, the VLAN is carried.
	if err := set(map[string]string{"/network-instances/network-instance[name=default]/vlans/vlan[vlan-id=10]": `{"config":{"vlan-id":10}}`,
		"/interfaces/interface[name=Ethernet0]/ethernet/switched-vlan/config/access-vlan": "10"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := tg.Port("leaf1", "Ethernet0"); p.AccessVLAN != 10 {
		t.Errorf("after the Set: %+v", p)
	}
}

func TestDeleteResetsAPort(t *testing.T) {
	tg, c := start(t, Config{}, "leaf1")
	ctx := authed(t.Context())
	_, err := c.Set(ctx, &gpb.SetRequest{Update: []*gpb.Update{{Path: mustPath(t, "/interfaces/interface[name=Ethernet0]/config"),
		Val: jsonIETF(`{"openconfig-interfaces:mtu": 9000, "enabled": false}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := tg.Port("leaf1", "Ethernet0"); p.MTU != 9000 || p.Enabled {
		t.Fatalf("after the update: %+v", p)
	}
	if _, err := c.Set(ctx, &gpb.SetRequest{Delete: []*gpb.Path{mustPath(t, "/interfaces/interface[name=Ethernet0]")}}); err != nil {
		t.Fatal(err)
	}
	if p, err := tg.Port("leaf1", "Ethernet0"); err != nil || p.MTU != 0 || !p.Enabled || p.AccessVLAN != 1 {
		t.Errorf("a deleted port: %+v, %v; want back at its defaults", p, err)
	}
}

func TestSubscribeOnce(t *testing.T) {
	tg, c := start(t, Config{}, "leaf1")
	if err := tg.SetNeighbor("leaf1", "Ethernet4", &Neighbor{ChassisID: "aa:bb:cc:dd:ee:ff", SystemName: "node-1", PortID: "eno1"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Subscribe(authed(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(&gpb.SubscribeRequest{Request: &gpb.SubscribeRequest_Subscribe{Subscribe: &gpb.SubscriptionList{
		Mode: gpb.SubscriptionList_ONCE, Encoding: gpb.Encoding_JSON,
		Subscription: []*gpb.Subscription{{Path: mustPath(t, "/lldp/interfaces/interface[name=Ethernet4]")},
			{Path: mustPath(t, "/interfaces/interface[name=Ethernet4]/state/oper-status")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	synced := false
	for range 10 {
		r, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.GetSyncResponse() {
			synced = true
		}
		for _, u := range r.GetUpdate().GetUpdate() {
			got = append(got, string(u.GetVal().GetJsonVal()))
		}
	}
	if !synced || len(got) != 2 || !strings.Contains(got[0], `"system-name":"node-1"`) || got[1] != `"UP"` {
		t.Errorf("once: synced %v, updates %q", synced, got)
	}
}

func TestBounds(t *testing.T) {
	_, c := start(t, Config{}, "leaf1")
	req := &gpb.GetRequest{}
	for range maxPaths + 1 {
		req.Path = append(req.Path, mustPath(t, "/interfaces"))
	}
	if _, err := c.Get(authed(t.Context()), req); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Get of %d paths: %v", maxPaths+1, err)
	}
	deep := strings.Repeat(`{"a":`, maxDepth+2) + "1" + strings.Repeat("}", maxDepth+2)
	_, err := c.Set(authed(t.Context()), &gpb.SetRequest{Update: []*gpb.Update{{Path: mustPath(t, "/interfaces"), Val: jsonIETF(deep)}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("a value nested %d deep: %v", maxDepth+2, err)
	}
	if _, err := ParsePath("/" + strings.Repeat("a/", maxPathElems+1)); err == nil {
		t.Error("a path of too many elements was read")
	}
}

func TestParsePath(t *testing.T) {
	p, err := ParsePath(`/interfaces/interface[name=Ethernet1/1]/config/mtu`)
	if err != nil {
		t.Fatal(err)
	}
	if PathString(p) != "/interfaces/interface[name=Ethernet1/1]/config/mtu" || p.Elem[1].Key["name"] != "Ethernet1/1" {
		t.Errorf("%v", p)
	}
	for _, bad := range []string{"/a[", "/a[k]", "/a[=v]", "//b", "/a[k=v]x", "/a[k=v][k=w]"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) read it", bad)
		}
	}
}

var _ = json.Valid
