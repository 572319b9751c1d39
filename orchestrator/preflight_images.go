package orchestrator

import (
	"context"
	"fmt"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// imageChecker is an ImageContent that checks a source before reading
// it (firmwarestore.Store: a file needs an image directory, a URL a cache).
type imageChecker interface {
	CheckImage(image string, src design.FirmwareImage) error
}

// imageSyncFindings checks, for the nodes that deploy an Image document, that
// the image can be synced into their Site (the images stage syncs it; it
// need not be in the provisioner yet): the Site's server driver manages
// images, and a custom image has an image store to be read from.
func (e *Engine) imageSyncFindings(ctx context.Context, d *design.Design, nodes []string) []finding {
	type key struct{ site, image string }
	users := map[key][]string{}
	var order []key
	for _, name := range nodes {
		n := d.Nodes[name]
		if n == nil {
			continue
		}
		if im := declaredImage(d, n); im != nil {
			k := key{d.SiteNameOf(n), im.Metadata.Name}
			if users[k] == nil {
				order = append(order, k)
			}
			users[k] = append(users[k], name)
		}
	}
	var out []finding
	for _, k := range order {
		im := d.Images[k.image]
		what := ""
		if _, err := drivers.ImagesAt(ctx, e.cfg.Drivers.Server, k.site); err != nil {
			what = fmt.Sprintf("image %s (%s) cannot be synced into site %s: %v", k.image, im.ProvisionerName(), k.site, err)
		} else if c := im.Spec.Custom; c != nil && e.cfg.Images == nil {
			what = fmt.Sprintf("custom image %s cannot be read: no image store is configured (serve --image-dir DIR)", k.image)
		} else if ch, ok := e.cfg.Images.(imageChecker); ok && c != nil {
			if err := ch.CheckImage(k.image, c.Source); err != nil {
				what = "custom image cannot be read: " + err.Error()
			}
		}
		if what != "" {
			out = append(out, finding{what: what, users: nodeList(users[k]), nodes: users[k],
				fix: "nothing was released or allocated; configure it as said (or give the nodes another platform.image), then run the task again"})
		}
	}
	return out
}
