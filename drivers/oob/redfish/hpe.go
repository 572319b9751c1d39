package redfish

import (
	"context"
	"errors"
	"fmt"
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

// updateServiceStatus is an update without a task (handle) as its
// UpdateService reads: Done at Complete, Failed at Error (with iLO's
// Result), InProgress while it runs or reads Updating. Idle (or no state)
// is Done when the inventory reports an item at the version updated to
// (the iLO resets after its own update and reads Idle after); else it is
// Failed when the BMC was seen not answering since (it reset and lost the
// update), or InProgress for resetWait from the first time it was seen
// (an update not started yet), then Failed. A BMC that does not answer is
// InProgress for resetWait.
func (d *Driver) updateServiceStatus(ctx context.Context, b drivers.BMC, handle, version string) (drivers.Result, error) {
	var us updateServiceDoc
	err := d.with(oneShot(ctx), b, func(s session) error { return getDoc(s.c, updateServiceHandle, &us) })
	key := endpoint(b) + handle
	if err != nil {
		if drivers.Classify(err) != drivers.Transient || status(err) != 0 || errors.Is(err, context.Canceled) {
			return drivers.Result{}, err
		}
		d.silentSince(key + "#down")
		return d.idleWait(key, handle, "does not answer"), nil
	}
	h := us.Oem.Hpe
	switch {
	case h.State == "Complete":
		d.forgetUpdate(key)
		return drivers.Done("the BMC's UpdateService reads Complete (the update %s accepted without a task)", handle), nil
	case h.State == "Error":
		d.forgetUpdate(key)
		said := strings.TrimSpace(h.Result.MessageID + ": " + strings.Join(h.Result.MessageArgs, "; "))
		return scrub(b, drivers.Failed("the BMC's UpdateService reads Error after the update %s: %s", handle, drivers.PeerText(said))), nil
	case h.running() || us.Status.State == "Updating":
		d.forgetUpdate(key)
		return drivers.InProgress(updatePoll, "%d%% (the BMC's UpdateService reads %s)", h.FlashProgressPercent, drivers.PeerText(h.State+" "+us.Status.State)), nil
	}
	if version, _ = url.PathUnescape(version); version != "" {
		if id := d.itemAt(ctx, b, version); id != "" {
			d.forgetUpdate(key)
			return drivers.Done("the BMC's UpdateService reads %s after the update and its inventory reports %s at version %s", drivers.PeerText(h.State), drivers.PeerText(id), drivers.PeerText(version)), nil
		}
	}
	if d.wasSilent(key + "#down") {
		d.forgetUpdate(key)
		return drivers.Failed("the BMC reset during the update %s and its UpdateService reads %q after: what it installed is unknown; read its firmware inventory, then start the update again", handle, drivers.PeerText(h.State)), nil
	}
	return d.idleWait(key, handle, fmt.Sprintf("reads %q, no update", drivers.PeerText(h.State))), nil
}

// idleWait is InProgress while the UpdateService has said what for less
// than resetWait, then Failed.
func (d *Driver) idleWait(key, handle, what string) drivers.Result {
	if wait := time.Since(d.silentSince(key)); wait < d.s.resetWait {
		return drivers.InProgress(5*time.Second, "the BMC's UpdateService %s for %s after the update %s: waiting up to %s (it resets after its own update)",
			what, wait.Round(time.Second), handle, d.s.resetWait)
	}
	d.forgetUpdate(key)
	return drivers.Failed("the BMC's UpdateService %s for %s after accepting the update %s without a task: what it installed is unknown; read its firmware inventory, then start the update again",
		what, d.s.resetWait, handle)
}

// forgetUpdate drops what was remembered of the update at key.
func (d *Driver) forgetUpdate(key string) {
	d.answered(key)
	d.answered(key + "#down")
}

// wasSilent: the BMC was seen not answering (key marked by silentSince).
func (d *Driver) wasSilent(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.silent[key]
	return ok
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
