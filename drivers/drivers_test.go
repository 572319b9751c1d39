package drivers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want drivers.Class
	}{
		{"nil", nil, ""},
		{"transient", drivers.Errorf(drivers.Transient, "x"), drivers.Transient},
		{"permanent wrapped", fmt.Errorf("step: %w", drivers.Errorf(drivers.Permanent, "x")), drivers.Permanent},
		{"needs intervention", drivers.NewError(drivers.NeedsIntervention, errors.New("x")), drivers.NeedsIntervention},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), drivers.Transient},
		{"cancelled", context.Canceled, drivers.Permanent},
		{"unclassified", errors.New("boom"), drivers.Transient},
	} {
		if got := drivers.Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify = %q, want %q", tc.name, got, tc.want)
		}
	}
	if drivers.NewError(drivers.Permanent, nil) != nil {
		t.Error("NewError(nil) must be nil")
	}
}

func TestResultValid(t *testing.T) {
	for _, tc := range []struct {
		r    drivers.Result
		want bool
	}{
		{drivers.Done("ok"), true},
		{drivers.InProgress(time.Second, "waiting"), true},
		{drivers.InProgress(0, "waiting"), false},
		{drivers.Failed("no image"), true},
		{drivers.Failed(""), false},
		{drivers.Result{Status: drivers.StatusDone, RetryAfter: time.Second}, false},
		{drivers.Result{}, false},
	} {
		if got := tc.r.Valid(); got != tc.want {
			t.Errorf("%+v: Valid = %v, want %v", tc.r, got, tc.want)
		}
	}
}

func TestSecretNeverShows(t *testing.T) {
	b := drivers.BMC{Node: "n1", Username: "admin", Password: drivers.NewSecret("hunter2")}
	j, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(b), fmt.Sprintf("%+v", b), fmt.Sprintf("%#v", b), string(j), b.Password.String()} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("secret shown: %s", s)
		}
	}
	if b.Password.Reveal() != "hunter2" {
		t.Error("Reveal lost the value")
	}
	var back drivers.BMC
	if err := json.Unmarshal(j, &back); err != nil || !back.Password.IsZero() {
		t.Errorf("unmarshal: %v, password zero = %v (JSON never carries secrets)", err, back.Password.IsZero())
	}
}
