package maas

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"

	"github.com/juju/mgo/v2/bson"
	"github.com/slipway-dev/slipway/drivers"
)

// Device aliases: the design names NICs and disks by bus address (pci,
// nvme, scsi); MAAS by the kernel names commissioning found. The node
// devices (GET nodes/{id}/devices/, MAAS 3.x) tie PCI addresses to
// interfaces and block devices; the commissioning details (lshw XML in the
// BSON of op=details) are the fallback, for SCSI addresses and MAAS 2.x.

// resolved is the MAAS side of a design device.
type resolved struct {
	Name string // MAAS name (interface or block device)
	ID   int    // MAAS ID when the node devices gave it, else 0
	MAC  string // NICs: the MAC, lower case, when known
}

// nodeDevice is the part of a MAAS node device the driver reads.
type nodeDevice struct {
	PCIAddress string        `json:"pci_address"`
	Interface  *mInterface   `json:"physical_interface"`
	Disk       *mBlockDevice `json:"physical_blockdevice"`
}

// resolveDevices maps each device (by alias) to its MAAS name. disks
// selects block devices, else interfaces. A device with no bus is a kernel
// name used as is; the others resolve through the node devices, then the
// lshw data of the commissioning details.
func (d *Driver) resolveDevices(ctx context.Context, systemID string, devs []drivers.Device, disks bool) (map[string]resolved, error) {
	return d.resolveFrom(ctx, systemID, devs, disks, nil)
}

// resolveFrom is resolveDevices with the node devices read already (nil:
// read them, from the cache when it has them).
func (d *Driver) resolveFrom(ctx context.Context, systemID string, devs []drivers.Device, disks bool, nds []nodeDevice) (map[string]resolved, error) {
	out := map[string]resolved{}
	var pending []drivers.Device
	for _, dev := range devs {
		if dev.Bus == "" {
			out[dev.Alias] = resolved{Name: dev.Alias}
			continue
		}
		pending = append(pending, dev)
	}
	if len(pending) == 0 {
		return out, nil
	}
	if nds == nil {
		var err error
		if nds, err = d.nodeDevicesOf(ctx, systemID, !disks); err != nil {
			return nil, err
		}
	}
	left := byNodeDevices(pending, nds, disks, out)
	if len(left) == 0 {
		return out, nil
	}
	hw, err := d.lshw(ctx, systemID)
	if err != nil {
		return nil, err
	}
	if missing := byLSHW(left, hw, disks, out); len(missing) > 0 {
		return nil, drivers.Errorf(drivers.Permanent, "maas: machine %s has no device at %s: check the hardware profile's deviceAliases against the commissioning data",
			systemID, strings.Join(missing, ", "))
	}
	return out, nil
}

// nodeDevicesOf reads the machine's node devices, from the cache when it
// has them (MAAS 2.x has none: 404, no devices).
func (d *Driver) nodeDevicesOf(ctx context.Context, systemID string, nics bool) ([]nodeDevice, error) {
	nds, ok := d.c.cache.nodeDevices(systemID, nics)
	if ok {
		return nds, nil
	}
	since := d.c.cache.begin()
	if err := d.c.call(ctx, http.MethodGet, "nodes/"+systemID+"/devices/", "", nil, &nds); err != nil && !isNotFound(err) {
		return nil, err
	}
	d.c.cache.putDevices(since, systemID, nds)
	return nds, nil
}

// byNodeDevices resolves into out the devices whose PCI address a node
// device has (a disk by any bus but SCSI, a NIC by PCI) and answers the
// others.
func byNodeDevices(devs []drivers.Device, nds []nodeDevice, disks bool, out map[string]resolved) []drivers.Device {
	byPCI := map[string]nodeDevice{}
	for _, nd := range nds {
		byPCI[strings.ToLower(nd.PCIAddress)] = nd
	}
	var left []drivers.Device
	for _, dev := range devs {
		nd, ok := byPCI[strings.ToLower(dev.Address)]
		switch {
		case ok && disks && nd.Disk != nil && dev.Bus != "scsi":
			out[dev.Alias] = resolved{Name: nd.Disk.Name, ID: nd.Disk.ID}
		case ok && !disks && nd.Interface != nil && dev.Bus == "pci":
			out[dev.Alias] = resolved{Name: nd.Interface.Name, ID: nd.Interface.ID, MAC: strings.ToLower(nd.Interface.MAC)}
		default:
			left = append(left, dev)
		}
	}
	return left
}

// byLSHW resolves into out the devices lshw has at their bus address and
// answers the ones it has not, as "alias (bus address)".
func byLSHW(devs []drivers.Device, hw map[string]lshwEntry, disks bool, out map[string]resolved) []string {
	var missing []string
	for _, dev := range devs {
		bus := "pci@"
		if dev.Bus == "scsi" {
			bus = "scsi@"
		}
		n, ok := hw[strings.ToLower(bus+dev.Address)]
		if !ok || n.name == "" {
			missing = append(missing, fmt.Sprintf("%s (%s %s)", dev.Alias, dev.Bus, dev.Address))
			continue
		}
		r := resolved{Name: strings.TrimPrefix(n.name, "/dev/")}
		if !disks {
			r.MAC = strings.ToLower(n.serial)
		}
		out[dev.Alias] = r
	}
	return missing
}

type lshwEntry struct{ name, serial string }

type lshwNode struct {
	BusInfo      string     `xml:"businfo"`
	LogicalNames []string   `xml:"logicalname"`
	Serial       string     `xml:"serial"`
	Nodes        []lshwNode `xml:"node"`
}

// lshw reads the machine's commissioning details and indexes the lshw
// nodes by businfo (pci@0000:3b:00.0, scsi@2:0.0.0).
func (d *Driver) lshw(ctx context.Context, systemID string) (map[string]lshwEntry, error) {
	body, err := d.c.getRaw(ctx, "machines/"+systemID+"/", "details")
	if err != nil {
		return nil, err
	}
	var doc struct {
		LSHW []byte `bson:"lshw"`
	}
	if err := bson.Unmarshal(body, &doc); err != nil {
		return nil, drivers.Errorf(drivers.Permanent, "maas: machine %s: decode the commissioning details: %v", systemID, err)
	}
	out := map[string]lshwEntry{}
	if len(doc.LSHW) == 0 {
		return out, nil
	}
	var root struct {
		Nodes []lshwNode `xml:"node"`
	}
	if err := xml.Unmarshal(doc.LSHW, &root); err != nil {
		return nil, drivers.Errorf(drivers.Permanent, "maas: machine %s: parse the lshw data: %v", systemID, err)
	}
	var walk func([]lshwNode)
	walk = func(ns []lshwNode) {
		for _, n := range ns {
			if n.BusInfo != "" && len(n.LogicalNames) > 0 {
				if _, seen := out[strings.ToLower(n.BusInfo)]; !seen {
					out[strings.ToLower(n.BusInfo)] = lshwEntry{name: n.LogicalNames[0], serial: n.Serial}
				}
			}
			walk(n.Nodes)
		}
	}
	walk(root.Nodes)
	return out, nil
}

// getRaw is a GET whose answer is not JSON (op=details answers BSON).
func (c *client) getRaw(ctx context.Context, path, op string) ([]byte, error) {
	return c.getRawLimit(ctx, path, op, maxDetailsBytes)
}

// getRawLimit is getRaw whose answer may not be longer than limit bytes:
// the body is cut at limit+1 and refused.
func (c *client) getRawLimit(ctx context.Context, path, op string, limit int64) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	answer, err := c.send(rctx, http.MethodGet, path, op, nil, limit)
	if err != nil {
		return nil, c.classify(ctx, http.MethodGet, path, op, err)
	}
	defer putAnswer(answer)
	if int64(answer.Len()) > limit {
		return nil, drivers.Errorf(drivers.Permanent, "maas GET %s op=%s: the answer is larger than %d bytes", path, op, limit)
	}
	return bytes.Clone(answer.Bytes()), nil
}
