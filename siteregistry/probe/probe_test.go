package probe

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/leakcheck"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/statestore/memory"
)

const (
	probeSecret = "Zx9+q/Lm&w=Rt%4Kp Yb7"
	probeKey    = "consumer:token:" + probeSecret
)

// quotingServer is a server driver (a plugin, say, which Slipway does
// not control) whose errors quote the key in the forms it sent it.
type quotingServer struct{ drivers.Server }

func (quotingServer) ProbeSite(context.Context) (drivers.SiteInfo, error) {
	return drivers.SiteInfo{Reachable: true}, errors.New(`MAAS said 500: Authorization: OAuth oauth_signature="` +
		url.QueryEscape("&"+probeSecret) + `" (` + base64.StdEncoding.EncodeToString([]byte("key="+probeKey)) + `)`)
}

// TestProbeHidesKey (S1): the probe's answer carries no form of the
// site's key, whatever the driver's error quotes; the error still says
// what failed.
func TestProbeHidesKey(t *testing.T) {
	st := memory.New()
	sec, err := secretstore.New(st, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	reg := siteregistry.New(st, sec)
	rec, err := reg.Create(t.Context(), siteregistry.Create{Name: "echo", URL: "http://127.0.0.1:1/MAAS", APIKey: probeKey})
	if err != nil {
		t.Fatal(err)
	}
	p := Prober{Sites: reg, NewServer: func(string, drivers.Config) (drivers.Server, error) { return quotingServer{}, nil }}
	out, err := p.ProbeSite(t.Context(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if leaks := leakcheck.Find(out.Error, probeSecret, probeKey); len(leaks) > 0 {
		t.Errorf("the probe's error shows the key: %v: %s", leaks, out.Error)
	}
	if !bytes.Contains([]byte(out.Error), []byte("MAAS said 500")) {
		t.Errorf("the probe's error does not say what failed: %s", out.Error)
	}
}
