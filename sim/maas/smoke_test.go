package maas

import (
	"net/http/httptest"
	"testing"

	"github.com/juju/gomaasapi/v2"
)

func TestSmokeGomaasapi(t *testing.T) {
	creds := Credentials{"ck", "tk", "ts"}
	s := New(Options{APIKey: creds, TimeScale: 0.0001})
	defer s.Close()
	hs := httptest.NewServer(s)
	defer hs.Close()
	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: hs.URL + "/MAAS", APIKey: creds.String()})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	m := s.newMachine("n1", "", []string{"52:54:00:00:00:01"})
	s.mu.Unlock()
	ms, err := c.Machines(gomaasapi.MachinesArgs{Hostnames: []string{"n1"}})
	if err != nil || len(ms) != 1 || ms[0].SystemID() != m.SystemID {
		t.Fatalf("machines: %v %v", ms, err)
	}
	zs, err := c.Zones()
	if err != nil || len(zs) != 1 {
		t.Fatalf("zones %v %v", zs, err)
	}
	if _, err := c.BootResources(); err != nil {
		t.Fatal(err)
	}
	bad, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: hs.URL + "/MAAS", APIKey: "ck:tk:wrong"})
	if err == nil {
		_, err = bad.Machines(gomaasapi.MachinesArgs{})
	}
	if err == nil {
		t.Fatal("wrong key accepted")
	}
	t.Log(s.Stats().Snapshot())
}
