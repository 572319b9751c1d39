package redfish

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// updateServiceHandle is the handle of an update the BMC accepted with
// 200 and no task (HPE iLO's SimpleUpdate): it is followed in the
// UpdateService's Oem.Hpe State and FlashProgressPercent.
const updateServiceHandle = serviceRoot + "/UpdateService"

// hpeUpdateState is iLO's UpdateService Oem.Hpe: State (Idle, Uploading,
// Verifying, Writing, Updating, Complete, Error, Unknown), the flash's
// percent, and the last update's Result.
type hpeUpdateState struct {
	State                string
	FlashProgressPercent int
	Result               struct {
		MessageID   string `json:"MessageId"`
		MessageArgs []string
	}
}

// running: iLO says an update is under way.
func (h hpeUpdateState) running() bool {
	switch h.State {
	case "Uploading", "Verifying", "Writing", "Updating", "Progressing":
		return true
	}
	return false
}

// updateServiceStatus is an update without a task as its UpdateService
// reads: Done at Complete, Failed at Error (with iLO's Result), InProgress
// while it runs or reads Updating. Idle (or no state) is InProgress for
// resetWait from the first time it was seen (the iLO resets after its own
// update and reads Idle after) unless the inventory reports an item at
// the version updated to (Done), then Failed: what was installed is
// unknown. A BMC that does not answer is waited for the same way.
func (d *Driver) updateServiceStatus(ctx context.Context, b drivers.BMC, version string) (drivers.Result, error) {
	var us updateServiceDoc
	err := d.with(oneShot(ctx), b, func(s session) error { return getDoc(s.c, updateServiceHandle, &us) })
	if version, _ = url.PathUnescape(version); err == nil && version != "" && !us.Oem.Hpe.running() && us.Oem.Hpe.State != "Complete" && us.Oem.Hpe.State != "Error" {
		if id := d.itemAt(ctx, b, version); id != "" {
			d.answered(endpoint(b) + updateServiceHandle)
			return drivers.Done("the BMC's UpdateService reads %s after the update and its inventory reports %s at version %s", drivers.PeerText(us.Oem.Hpe.State), drivers.PeerText(id), drivers.PeerText(version)), nil
		}
	}
	key := endpoint(b) + updateServiceHandle
	silent := err != nil && drivers.Classify(err) == drivers.Transient && status(err) == 0 && !errors.Is(err, context.Canceled)
	if err != nil && !silent {
		return drivers.Result{}, err
	}
	h := us.Oem.Hpe
	switch {
	case !silent && h.State == "Complete":
		d.answered(key)
		return drivers.Done("the BMC's UpdateService reads Complete (the update accepted without a task)"), nil
	case !silent && h.State == "Error":
		d.answered(key)
		said := strings.TrimSpace(h.Result.MessageID + ": " + strings.Join(h.Result.MessageArgs, "; "))
		return scrub(b, drivers.Failed("the BMC's UpdateService reads Error after the update: %s", drivers.PeerText(said))), nil
	case !silent && (h.running() || us.Status.State == "Updating"):
		d.answered(key)
		return drivers.InProgress(2*time.Second, "%d%% (the BMC's UpdateService reads %s)", h.FlashProgressPercent, drivers.PeerText(h.State+" "+us.Status.State)), nil
	}
	wait := time.Since(d.silentSince(key))
	if wait < d.s.resetWait {
		return drivers.InProgress(5*time.Second, "the BMC's UpdateService reads no update (or the BMC does not answer) for %s: waiting up to %s (it resets after its own update)",
			wait.Round(time.Second), d.s.resetWait), nil
	}
	d.answered(key)
	return drivers.Failed("the BMC's UpdateService has read no update for %s after accepting one without a task (state %q): what it installed is unknown; read its firmware inventory, then start the update again",
		d.s.resetWait, drivers.PeerText(h.State)), nil
}

// itemAt is the ID of an inventory item at version ("" when none, or the
// inventory cannot be read).
func (d *Driver) itemAt(ctx context.Context, b drivers.BMC, version string) string {
	items, err := d.FirmwareInventory(oneShot(ctx), b)
	if err != nil {
		return ""
	}
	for _, it := range items {
		if it.Version == version {
			return it.ID
		}
	}
	return ""
}
