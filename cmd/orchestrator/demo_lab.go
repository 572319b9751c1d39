package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/juju/gomaasapi/v2"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/oob/ipmi"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// demoLab starts the virtual lab from the design, PXE-boots every machine
// (they enlist themselves in the simulated MAAS) and commissions them
// through the MAAS API: the ground the deploy engine will stand on.
func (a *app) demoLab(ctx context.Context, d *design.Design) error {
	lb, err := lab.Start(ctx, lab.Config{Design: d, TimeScale: 0.002, Seed: 1, Log: a.log})
	if err != nil {
		return err
	}
	defer lb.Close()
	info := lb.Info()
	fmt.Fprintf(a.stdout, "simulated MAAS at %s; %d machines, each with a BMC on 127.0.0.1:<port>\n", info.MAASURL, len(info.BMCs))
	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: info.MAASURL, APIKey: info.APIKey})
	if err != nil {
		return err
	}
	// Slipway's IPMI driver sets PXE boot and powers each machine on
	// through its simulated BMC (RMCP+, cipher suite 3, on loopback).
	oob, err := ipmi.New(drivers.Config{})
	if err != nil {
		return err
	}
	start := time.Now()
	for _, m := range lb.Machines() {
		user, pw := m.BMCCredentials()
		b := drivers.BMC{Node: m.Name, Address: m.BMC.Address, Port: m.BMC.Port, Protocol: "lanplus", CipherSuite: 3,
			Privilege: "administrator", Username: user, Password: drivers.NewSecret(pw)}
		if _, err := oob.SetBootDevice(ctx, b, drivers.BootDevice{Device: "pxe", EFI: true}); err != nil {
			return fmt.Errorf("set PXE boot on %s: %w", m.Name, err)
		}
		if _, err := oob.PowerOn(ctx, b); err != nil {
			return fmt.Errorf("power on %s: %w", m.Name, err)
		}
	}
	fmt.Fprintf(a.stdout, "IPMI: set PXE boot and powered on %d machines through their BMCs in %s\n", len(info.BMCs), time.Since(start).Round(time.Millisecond))
	ids, err := waitMachines(ctx, c, len(info.BMCs), "New", 30*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%d machines PXE-booted and enlisted themselves as New\n", len(ids))
	for _, id := range ids {
		if err := maasOp(ctx, info, "/machines/"+id+"/", "commission"); err != nil {
			return err
		}
	}
	if _, err := waitMachines(ctx, c, len(ids), "Ready", 60*time.Second); err != nil {
		return err
	}
	ms, err := c.Machines(gomaasapi.MachinesArgs{})
	if err != nil {
		return err
	}
	for _, m := range ms {
		var names []string
		for _, i := range m.InterfaceSet() {
			names = append(names, i.Name())
		}
		fmt.Fprintf(a.stdout, "  %s  %-6s %d NICs (%s), %d disks\n", m.SystemID(), m.StatusName(), len(names), strings.Join(names, " "), len(m.PhysicalBlockDevices()))
	}
	st := lb.MAAS.Stats().Snapshot()
	fmt.Fprintf(a.stdout, "commissioned %d machines with %d MAAS API calls\n", len(ms), st.Total)
	return nil
}

// waitMachines polls until want machines have the status, showing progress.
func waitMachines(ctx context.Context, c gomaasapi.Controller, want int, status string, limit time.Duration) ([]string, error) {
	deadline := time.Now().Add(limit)
	for {
		ms, err := c.Machines(gomaasapi.MachinesArgs{})
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, m := range ms {
			if m.StatusName() == status {
				ids = append(ids, m.SystemID())
			}
		}
		if len(ids) >= want {
			return ids, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lab: %d of %d machines reached %s within %s", len(ids), want, status, limit)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// maasOp posts an op with the lab's API key.
func maasOp(ctx context.Context, info lab.Info, path, op string) error {
	creds, err := maas.ParseAPIKey(info.APIKey)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, info.MAASURL+"/api/2.0"+path+"?op="+op, strings.NewReader(url.Values{}.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	creds.Sign(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("MAAS %s %s: %d %s", op, path, resp.StatusCode, b)
	}
	return nil
}
