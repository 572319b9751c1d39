package redfish

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish/common"
	gfredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/slipway-dev/slipway/drivers"
)

var _ drivers.OOBRAID = (*Driver)(nil)

// Bounds of a volume the driver asks for, and of what it reads.
const (
	maxVolumeDrives = 32
	maxVolumeName   = 64
	maxControllers  = 16
	maxVolumesRead  = 256
)

// controller is a RAID controller's drives (by URI) and its volumes in
// the order its Volumes collection lists them.
type controller struct {
	volumesURI string
	drives     map[string]drivers.StorageDrive // by URI
	volumes    []*gfredfish.Volume
}

// controllers reads the system's storage controllers that have drives.
func controllers(s session) ([]controller, error) {
	sts, err := s.sys.Storage()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sts, func(a, b *gfredfish.Storage) int { return strings.Compare(a.ID, b.ID) })
	var out []controller
	for _, st := range sts[:min(len(sts), maxControllers)] {
		drives, err := st.Drives()
		if err != nil {
			// not a controller without drives: planning against an empty
			// list would build (or verify) nothing
			return nil, fmt.Errorf("the drives of storage controller %s cannot be read (%w): retry when the BMC's storage service answers", st.ID, err)
		}
		if len(drives) == 0 {
			continue // a controller without drives has no volume to build
		}
		c := controller{drives: map[string]drivers.StorageDrive{}}
		for _, dr := range drives {
			c.drives[dr.ODataID] = storageDrive(dr)
		}
		if c.volumesURI, c.volumes, err = volumes(s, st); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func storageDrive(dr *gfredfish.Drive) drivers.StorageDrive {
	sd := drivers.StorageDrive{ID: dr.ID, Model: dr.Model, CapacityBytes: dr.CapacityBytes}
	if loc := dr.PhysicalLocation.PartLocation; loc.LocationType == common.BayLocationType || loc.ServiceLabel != "" {
		sd.Bay = strconv.Itoa(loc.LocationOrdinalValue)
	}
	return sd
}

// volumes reads a controller's Volumes collection in its order.
func volumes(s session, st *gfredfish.Storage) (string, []*gfredfish.Volume, error) {
	var doc struct{ Volumes odataLink }
	if err := getDoc(s.c, st.ODataID, &doc); err != nil {
		return "", nil, err
	}
	if doc.Volumes.ID == "" {
		return "", nil, nil
	}
	var coll struct{ Members []odataLink }
	if err := getDoc(s.c, doc.Volumes.ID, &coll); err != nil {
		return "", nil, err
	}
	var out []*gfredfish.Volume
	for _, m := range coll.Members[:min(len(coll.Members), maxVolumesRead)] {
		v, err := gfredfish.GetVolume(s.c, m.ID)
		if err != nil {
			return "", nil, err
		}
		out = append(out, v)
	}
	return doc.Volumes.ID, out, nil
}

// volume is a found volume as the SDK has it. The controller's first
// volume is the one the system boots from (a PERC controller's first
// virtual disk is its boot device unless set otherwise).
func (c controller) volume(i int) drivers.Volume {
	v := c.volumes[i]
	out := drivers.Volume{ID: v.ID, Name: v.Name, Level: strings.ToLower(string(v.RAIDType)), SizeBytes: int64(v.CapacityBytes), Boot: i == 0}
	drives, _ := v.Drives()
	for _, dr := range drives {
		out.Drives = append(out.Drives, c.address(dr.ODataID))
	}
	slices.Sort(out.Drives)
	return out
}

// address is the drive at uri as device aliases name it: its bay, else
// its Id.
func (c controller) address(uri string) string {
	if d := c.drives[uri]; d.Bay != "" {
		return d.Bay
	}
	return uri[strings.LastIndex(uri, "/")+1:]
}

// Storage lists the drives behind the system's RAID controllers and
// their volumes (drivers.OOBRAID).
func (d *Driver) Storage(ctx context.Context, b drivers.BMC) ([]drivers.StorageDrive, []drivers.Volume, error) {
	var drives []drivers.StorageDrive
	var vols []drivers.Volume
	err := d.with(ctx, b, func(s session) error {
		cs, err := controllers(s)
		for _, c := range cs {
			for _, dr := range c.drives {
				drives = append(drives, dr)
			}
			for i := range c.volumes {
				vols = append(vols, c.volume(i))
			}
		}
		return err
	})
	slices.SortFunc(drives, func(a, b drivers.StorageDrive) int { return strings.Compare(a.ID, b.ID) })
	return drives, vols, err
}

// CreateVolume builds v on the controller that has its drives (v.Drives:
// bays, or drive Ids). A volume of that name over those drives is Done
// already; a layout the controller refuses is Failed with its message.
func (d *Driver) CreateVolume(ctx context.Context, b drivers.BMC, v drivers.Volume) (drivers.Result, error) {
	raid, ok := map[string]string{drivers.RAID0: "RAID0", drivers.RAID1: "RAID1", drivers.RAID5: "RAID5", drivers.RAID6: "RAID6", drivers.RAID10: "RAID10"}[v.Level]
	switch {
	case !ok:
		return drivers.Failed("volume %s: level %q is not raid0, raid1, raid5, raid6 or raid10", drivers.PeerText(v.Name), drivers.PeerText(v.Level)), nil
	case len(v.Drives) == 0 || len(v.Drives) > maxVolumeDrives || len(v.Name) > maxVolumeName || v.SizeBytes < 0:
		return drivers.Failed("volume %s: 1 to %d drives, a name of at most %d characters and a size of 0 or more are needed", drivers.PeerText(v.Name), maxVolumeDrives, maxVolumeName), nil
	}
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		cs, err := controllers(s)
		if err != nil {
			return err
		}
		c, uris, why := controllerOf(cs, v.Drives)
		if why != "" {
			res = drivers.Failed("volume %s: %s", drivers.PeerText(v.Name), why)
			return nil
		}
		if r, done := c.existing(v); done {
			res = r
			return nil
		}
		res, err = c.create(s, v, raid, uris)
		return err
	})
	return scrub(b, res), err
}

// controllerOf finds the controller with every drive of addrs (bays or
// Ids) and their URIs; when there is none, why: the first address no
// controller has, or that no one controller has them all.
func controllerOf(cs []controller, addrs []string) (controller, []string, string) {
	for _, c := range cs {
		if uris := c.uris(addrs); len(uris) == len(addrs) {
			slices.Sort(uris)
			return c, uris, ""
		}
	}
	for _, a := range addrs {
		if !slices.ContainsFunc(cs, func(c controller) bool { return len(c.uris([]string{a})) == 1 }) {
			return controller{}, nil, "the BMC has no drive " + drivers.PeerText(a) + " behind a RAID controller"
		}
	}
	return controller{}, nil, "no one RAID controller has all of drives " + drivers.PeerText(strings.Join(addrs, ", "))
}

// uris are the URIs of the drives of addrs the controller has.
func (c controller) uris(addrs []string) []string {
	var uris []string
	for _, a := range addrs {
		for uri, dr := range c.drives {
			if dr.Bay == a || dr.ID == a {
				uris = append(uris, uri)
				break
			}
		}
	}
	return uris
}

// existing: a volume of v's name over v's drives is there (Done, or
// InProgress while the controller builds it); a boot volume that would not
// be the controller's first is Failed.
func (c controller) existing(v drivers.Volume) (drivers.Result, bool) {
	want := slices.Sorted(slices.Values(v.Drives))
	for i := range c.volumes {
		got := c.volume(i)
		if got.Name != v.Name || !slices.Equal(got.Drives, want) {
			continue
		}
		if st := c.volumes[i].Status.State; st != "" && st != common.EnabledState {
			return drivers.InProgress(2*time.Second, "volume %s (%s) is %s", got.Name, got.ID, st), true
		}
		return drivers.Done("volume %s (%s, %s over %s) exists", got.Name, got.ID, got.Level, strings.Join(got.Drives, ", ")), true
	}
	if v.Boot && len(c.volumes) > 0 {
		return drivers.Failed("volume %s is to be the boot volume, and the controller boots from its first volume, %s (%s): delete the volumes there first, or build the boot volume first",
			drivers.PeerText(v.Name), c.volumes[0].ID, c.volumes[0].Name), true
	}
	return drivers.Result{}, false
}

// create posts the volume to the controller's Volumes collection (the
// transport follows the build's task to its end).
func (c controller) create(s session, v drivers.Volume, raid string, uris []string) (drivers.Result, error) {
	if c.volumesURI == "" {
		return drivers.Failed("volume %s: the RAID controller has no Volumes collection to build it in", drivers.PeerText(v.Name)), nil
	}
	links := make([]map[string]string, len(uris))
	for i, u := range uris {
		links[i] = map[string]string{"@odata.id": u}
	}
	body := map[string]any{"Name": v.Name, "RAIDType": raid, "Links": map[string]any{"Drives": links}}
	if v.SizeBytes > 0 {
		body["CapacityBytes"] = v.SizeBytes
	}
	resp, err := s.c.Post(c.volumesURI, body)
	if err != nil {
		if code := status(err); code >= 400 && code < 500 && code != http.StatusUnauthorized && code != http.StatusForbidden {
			return drivers.Failed("the RAID controller refused volume %s (%s over %s): %s", drivers.PeerText(v.Name), v.Level, strings.Join(v.Drives, ", "), bmcMessage(err)), nil
		}
		if status(err) == http.StatusInternalServerError {
			return drivers.Failed("the RAID controller failed to build volume %s: %s", drivers.PeerText(v.Name), bmcMessage(err)), nil
		}
		return drivers.Result{}, err
	}
	resp.Body.Close()
	return drivers.Done("volume %s built: %s over %s", drivers.PeerText(v.Name), v.Level, strings.Join(v.Drives, ", ")), nil
}

// DeleteVolume removes the volume of that Id; Done when there is none.
func (d *Driver) DeleteVolume(ctx context.Context, b drivers.BMC, id string) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		cs, err := controllers(s)
		if err != nil {
			return err
		}
		for _, c := range cs {
			for _, v := range c.volumes {
				if v.ID != id {
					continue
				}
				resp, err := s.c.Delete(v.ODataID)
				if err != nil && status(err) != http.StatusNotFound {
					return err
				}
				if resp != nil {
					resp.Body.Close()
				}
				res = drivers.Done("volume %s (%s) deleted", v.ID, v.Name)
				return nil
			}
		}
		res = drivers.Done("no volume %s", drivers.PeerText(id))
		return nil
	})
	return res, err
}
