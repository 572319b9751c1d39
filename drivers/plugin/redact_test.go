package plugin

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/internal/leakcheck"
)

const quotedPassword = "bmc+/S3cr&t=%4 pw"

// quotingOOB is a plugin's OOB driver whose errors quote the password
// in the forms a BMC or a proxy might echo it.
type quotingOOB struct{ *fake.OOB }

func (quotingOOB) PowerStatus(_ context.Context, b drivers.BMC) (drivers.PowerState, error) {
	pw := b.Password.Reveal()
	return "", drivers.NewError(drivers.Permanent, errors.New("BMC said 400: "+url.QueryEscape(pw)+" Basic "+
		base64.StdEncoding.EncodeToString([]byte(b.Username+":"+pw))))
}

// TestPluginErrorsHidePassword (S1): the orchestrator's side of a plugin
// redacts every form of the credentials it sent from the plugin's error
// (a plugin is not Slipway's code), and keeps the error's class and text.
func TestPluginErrorsHidePassword(t *testing.T) {
	raw := dispenseGRPC(t, Drivers{OOB: func(drivers.Config) (drivers.OOB, error) {
		return quotingOOB{fake.NewOOB(fake.Script{})}, nil
	}}, drivers.KindOOB, drivers.Config{})
	b := drivers.BMC{Node: "n1", Address: "127.0.0.1", Username: "admin", Password: drivers.NewSecret(quotedPassword)}
	_, err := raw.(drivers.OOB).PowerStatus(t.Context(), b)
	var de *drivers.Error
	if !errors.As(err, &de) || de.Class != drivers.Permanent {
		t.Fatalf("the plugin's error lost its class: %v", err)
	}
	if leaks := leakcheck.Find(err.Error(), quotedPassword, "admin:"+quotedPassword); len(leaks) > 0 {
		t.Errorf("the plugin's error shows the password: %v: %s", leaks, err)
	}
}
