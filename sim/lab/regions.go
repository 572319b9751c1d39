package lab

import (
	"net/http"
	"path/filepath"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/sim/maas"
)

// Several MAAS regions: a design with several Sites gets one simulated
// MAAS region per Site, all on the lab's listener: the first Site's at
// /MAAS (Lab.MAAS), each other's at /SITE/MAAS. A node's machine enlists
// and deploys in its Site's region; the BMCs, the power driver and the
// node agents are shared, as a control plane's sites share nothing else.

// Region is one simulated MAAS region.
type Region struct {
	Site   string       // the design's Site
	MAAS   *maas.Server // its simulator
	Prefix string       // its path on the lab's listener ("" for the first)
}

// SiteInfo is one region as `orchestrator lab` prints it.
type SiteInfo struct {
	Site    string `json:"site"`
	MAASURL string `json:"maas_url"`
}

// startRegions creates the regions of the design's Sites (one when it has
// one or none).
func (l *Lab) startRegions(creds maas.Credentials) {
	names := []string{""}
	if d := l.cfg.Design; d != nil && len(d.SiteNames()) > 0 {
		names = d.SiteNames()
	}
	var dur *maas.Durations
	if l.cfg.RegionSync != 0 {
		d := maas.DefaultDurations
		d.RegionSync = l.cfg.RegionSync
		dur = &d
	}
	for i, name := range names {
		r := Region{Site: name, MAAS: maas.New(maas.Options{APIKey: creds, TimeScale: l.cfg.TimeScale, Faults: l.cfg.Faults,
			Seed: l.cfg.Seed + int64(i), Power: powerDriver{l}, Hooks: hooks{l}, Inventory: l.inventory, Log: l.cfg.Log,
			Domain: domainOfSite(l.cfg.Design, name), ImageDir: regionImageDir(l.cfg.ImageDir, name), MaxImageBytes: l.cfg.MaxImageBytes,
			RegionControllers: l.cfg.RegionControllers, Durations: dur})}
		if i > 0 {
			r.Prefix = "/" + name
		}
		l.regions = append(l.regions, r)
	}
	l.MAAS = l.regions[0].MAAS
}

// Regions returns the lab's MAAS regions, the first Site's first.
func (l *Lab) Regions() []Region { return append([]Region(nil), l.regions...) }

// regionOf is the region of a machine's Site.
func (l *Lab) regionOf(m *Machine) *maas.Server {
	for _, r := range l.regions {
		if r.Site == m.site {
			return r.MAAS
		}
	}
	return l.MAAS
}

// serveRegion sends a request under a region's prefix to that region.
func (l *Lab) serveRegion(w http.ResponseWriter, r *http.Request) bool {
	for _, rg := range l.regions[1:] {
		if rest, ok := strings.CutPrefix(r.URL.Path, rg.Prefix+"/MAAS"); ok {
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/MAAS" + rest
			r2.URL.RawPath = ""
			rg.MAAS.ServeHTTP(w, r2)
			return true
		}
	}
	return false
}

func domainOfSite(d *design.Design, site string) string {
	if d != nil {
		if s := d.SiteNamed(site); s != nil && s.Spec.Domain != "" {
			return s.Spec.Domain
		}
	}
	return domainOf(d)
}

// regionImageDir is a region's directory of uploaded images under dir
// ("" stays "": the region's own temporary directory).
func regionImageDir(dir, site string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "region-"+orDefault(site, "default"))
}
