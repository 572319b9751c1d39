package sitemux

import (
	"context"
	"fmt"

	"github.com/slipway-dev/slipway/drivers"
)

var _ drivers.SiteImager = (*Server)(nil)

// SiteImages is the boot images of the site's driver (the only site when
// site is ""), each call under the site's concurrency limit.
func (s *Server) SiteImages(ctx context.Context, site string) (drivers.ServerImages, error) {
	if site == "" && len(s.names) == 1 {
		site = s.names[0]
	}
	st := s.sites[site]
	if st == nil {
		return nil, drivers.Errorf(drivers.Permanent, "images of site %q: this server drives sites %v (a site added since serve started needs serve restarted)", site, s.names)
	}
	im, err := drivers.ImagesAt(ctx, st.drv, site)
	if err != nil {
		return nil, err
	}
	return siteImages{st: st, im: im}, nil
}

// SiteImages fails: the site has no provisioner endpoint.
func (u Unbound) SiteImages(context.Context, string) (drivers.ServerImages, error) {
	return nil, u.err()
}

// siteImages runs a site's image calls under its limit.
type siteImages struct {
	st *site
	im drivers.ServerImages
}

var _ drivers.ServerImages = siteImages{}

// onSite runs fn under the site's limit; its error names the site.
func onSite[T any](ctx context.Context, st *site, fn func() (T, error)) (T, error) {
	v, err := call(ctx, st, func(drivers.Server) (T, error) { return fn() })
	if err != nil {
		return v, fmt.Errorf("site %s: %w", st.name, err)
	}
	return v, nil
}

func (s siteImages) Images(ctx context.Context) ([]drivers.ProvisionerImage, error) {
	return onSite(ctx, s.st, func() ([]drivers.ProvisionerImage, error) { return s.im.Images(ctx) })
}

func (s siteImages) ImportImage(ctx context.Context, img drivers.ImageRef) (drivers.Result, error) {
	return onSite(ctx, s.st, func() (drivers.Result, error) { return s.im.ImportImage(ctx, img) })
}

func (s siteImages) StartImageUpload(ctx context.Context, img drivers.ImageRef) (drivers.ImageUpload, error) {
	return onSite(ctx, s.st, func() (drivers.ImageUpload, error) { return s.im.StartImageUpload(ctx, img) })
}

func (s siteImages) UploadImageChunk(ctx context.Context, up drivers.ImageUpload, chunk []byte) (drivers.ImageUpload, error) {
	return onSite(ctx, s.st, func() (drivers.ImageUpload, error) { return s.im.UploadImageChunk(ctx, up, chunk) })
}

func (s siteImages) AbandonImageUpload(ctx context.Context, up drivers.ImageUpload) error {
	_, err := onSite(ctx, s.st, func() (struct{}, error) { return struct{}{}, s.im.AbandonImageUpload(ctx, up) })
	return err
}
