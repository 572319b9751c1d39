package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish/common"
	gfredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/slipway-dev/slipway/drivers"
)

// BIOSAttributes returns the BIOS settings in effect, as strings.
func (d *Driver) BIOSAttributes(ctx context.Context, b drivers.BMC) (map[string]string, error) {
	var out map[string]string
	err := d.with(ctx, b, func(s session) error {
		bios, err := s.sys.Bios()
		if err != nil {
			return err
		}
		out = make(map[string]string, len(bios.Attributes))
		for k, v := range bios.Attributes {
			out[k] = fmt.Sprint(v)
		}
		return nil
	})
	return out, err
}

// ApplyBIOS stages the settings of want that differ from those in effect
// (each converted to its attribute's type) for the next reset, with
// @Redfish.SettingsApplyTime OnReset when the Bios advertises it (iDRAC
// keeps settings staged without one pending across resets: no
// configuration job is made).
func (d *Driver) ApplyBIOS(ctx context.Context, b drivers.BMC, want map[string]string) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		bios, err := s.sys.Bios()
		if err != nil {
			return err
		}
		stage, err := biosChanges(bios.Attributes, want)
		if err != nil {
			res = drivers.Failed("%v", err)
			return nil
		}
		if len(stage) == 0 {
			res = drivers.Done("BIOS settings in effect")
			return nil
		}
		if err := bios.UpdateBiosAttributesApplyAt(stage, applyTime(s.c, bios.ODataID)); err != nil {
			if status(err) == 400 {
				res = drivers.Failed("the BMC refused the BIOS settings %s: %s", names(stage), bmcMessage(err))
				return nil
			}
			return err
		}
		res = drivers.InProgress(5*time.Second, "staged %s: they take effect at the next reset of the machine", names(stage))
		return nil
	})
	return scrub(b, res), err
}

// biosChanges are the attributes of want whose value in effect differs,
// converted to the type the attribute has (number, boolean or string).
func biosChanges(current gfredfish.SettingsAttributes, want map[string]string) (gfredfish.SettingsAttributes, error) {
	out := gfredfish.SettingsAttributes{}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		cur, ok := current[k]
		if !ok {
			return nil, fmt.Errorf("the BIOS has no attribute %s (its attributes: %s)", k, names(current))
		}
		v, err := typed(cur, want[k])
		if err != nil {
			return nil, fmt.Errorf("bios.attributes.%s: %w", k, err)
		}
		if fmt.Sprint(cur) != fmt.Sprint(v) {
			out[k] = v
		}
	}
	return out, nil
}

// typed converts s to the JSON type of the attribute's current value.
func typed(cur any, s string) (any, error) {
	switch cur.(type) {
	case float64, json.Number:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number, and the attribute is one", s)
		}
		return f, nil
	case bool:
		v, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false, and the attribute is a boolean", s)
		}
		return v, nil
	}
	return s, nil
}

func names(m gfredfish.SettingsAttributes) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// applyTime is OnReset when the Bios at uri lists it in its
// @Redfish.Settings SupportedApplyTimes, else "" (no apply time sent: a
// BMC that advertises none may refuse the annotation). gofish reports
// every apply time when the BMC lists none, so the list is read here.
func applyTime(c common.Client, uri string) common.ApplyTime {
	var doc struct {
		Settings struct{ SupportedApplyTimes []string } `json:"@Redfish.Settings"`
	}
	if getDoc(c, uri, &doc) != nil || !slices.Contains(doc.Settings.SupportedApplyTimes, string(common.OnResetApplyTime)) {
		return ""
	}
	return common.OnResetApplyTime
}
