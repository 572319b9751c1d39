package drivers

import "context"

// SiteImager is implemented by a wrapper of server drivers (a site
// multiplexer, serve's rebinding that follows design changes, metrics):
// SiteImages answers the boot images of the driver of one Site behind it.
// Images belong to a Site's provisioner, not to a node, so the engine
// reaches them by Site. Such a wrapper does not implement ServerImages
// itself: whether a Site's images can be managed follows its driver.
type SiteImager interface {
	SiteImages(ctx context.Context, site string) (ServerImages, error)
}

// ImagesAt is the boot images of site's provisioner behind srv: what
// srv's SiteImages answers when srv wraps drivers, else srv itself when it
// is a ServerImages (the driver of one Site; site then only names it in
// errors). A driver that does not manage images is a Permanent error
// naming the Site. Callers use it rather than a type assertion, so that
// wrapped drivers manage images too.
func ImagesAt(ctx context.Context, srv Server, site string) (ServerImages, error) {
	if srv == nil {
		return nil, Errorf(Permanent, "site %s has no server driver: its boot images cannot be managed", site)
	}
	if w, ok := srv.(SiteImager); ok {
		return w.SiteImages(ctx, site)
	}
	if im, ok := srv.(ServerImages); ok {
		return im, nil
	}
	return nil, Errorf(Permanent, "site %s: its server driver does not manage boot images (built-in drivers only: maas); "+
		"import or upload the image with the provisioner's own tools, or use the maas driver", site)
}
