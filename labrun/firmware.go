package labrun

import (
	"errors"
	"fmt"
	stdnet "net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/firmwarestore"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// LabImageSize is the size of the lab's firmware images (the example's
// baseline carries the SHA-256 of each at this size).
const LabImageSize = 1 << 20

// startFirmware makes the firmware directory of the lab, holding the lab
// image (sim/redfish.LabImage) of every file a hardware profile's
// firmware baseline names, and serves it through a firmware store on a
// loopback port, as `serve --firmware-dir` does: the lab's BMCs fetch
// the images from it. An image whose SHA-256 is not the lab image's is
// refused by the store, as a wrong image is.
func (env *Env) startFirmware(d *design.Design) error {
	dir, err := os.MkdirTemp("", "slipway-lab-firmware-")
	if err != nil {
		return err
	}
	for _, hp := range d.HardwareProfiles {
		for _, fb := range hp.Spec.Firmware {
			f := fb.Image.File
			if f == "" || f != filepath.Base(f) {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, f), simrf.LabImage(fb.Component, fb.Version, LabImageSize), 0o600); err != nil {
				os.RemoveAll(dir)
				return err
			}
		}
	}
	ln, err := stdnet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("firmware listener: %w", err)
	}
	st, err := firmwarestore.New(firmwarestore.Config{Dir: dir, CacheDir: filepath.Join(dir, ".cache"), BaseURL: "http://" + ln.Addr().String(),
		FetchTimeout: time.Minute})
	if err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return err
	}
	srv := &http.Server{Handler: st.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			env.opts.Log.Warn().Err(err).Msg("lab firmware server")
		}
	}()
	env.Firmware = st
	env.closeFirmware = func() {
		_ = srv.Close()
		_ = os.RemoveAll(dir)
	}
	return nil
}
