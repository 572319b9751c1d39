package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/firmwarestore"
)

// defaultFirmwareListen is where the firmware images are served when a
// firmware directory is given and no listener.
const defaultFirmwareListen = ":8702"

// startFirmware serves the firmware store the engine's baseline stage
// takes images from (firmwareDir; images fetched from URLs are kept in
// firmware-cache beside the state), on its own listener: the BMCs fetch
// /firmware/<sha256> there, an image only once its SHA-256 was checked.
// Nothing when neither firmwareDir nor firmwareListen is set.
func (o Options) startFirmware(c Config) (*firmwarestore.Store, func(), error) {
	if c.FirmwareDir == "" && c.FirmwareListen == "" {
		return nil, nil, nil
	}
	addr := orDefault(c.FirmwareListen, defaultFirmwareListen)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("firmware images: listen on %s: %w (set firmwareListen)", addr, err)
	}
	url := c.FirmwareURL
	if url == "" {
		url = "http://" + ln.Addr().String()
	}
	st, err := firmwarestore.New(firmwarestore.Config{Dir: c.FirmwareDir, CacheDir: filepath.Join(c.dir(), "firmware-cache"), BaseURL: strings.TrimSuffix(url, "/")})
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	srv := &http.Server{Handler: st.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error().Err(err).Msg("firmware image server")
		}
	}()
	fmt.Fprintf(o.Stderr, "slipway: firmware images on %s (BMCs fetch %s/firmware/SHA256; directory %s)\n", ln.Addr(), url, orDefault(c.FirmwareDir, "none: URLs only"))
	return st, func() { _ = srv.Close(); <-done }, nil
}

// checkFirmware checks that the BMCs are given a URL they can reach:
// firmwareURL, when set, an http(s) URL with a host and no user
// information; without it, a listener on one address (a listener on every
// address would give them http://[::]:8702, which no BMC can fetch).
func (c Config) checkFirmware() error {
	if c.FirmwareDir == "" && c.FirmwareListen == "" {
		return nil
	}
	if c.FirmwareURL != "" {
		u, err := url.Parse(c.FirmwareURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			return fmt.Errorf("config firmwareURL: want the http(s) URL the BMCs reach the firmware listener at, with no user information or query (http://10.0.0.5:8702)")
		}
		return nil
	}
	addr := orDefault(c.FirmwareListen, defaultFirmwareListen)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("config firmwareListen %q: want HOST:PORT (%v)", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("config firmwareListen %q listens on every address, and the BMCs need one to fetch images from: set firmwareURL (--firmware-url) to the URL they reach it at (http://10.0.0.5:8702), or listen on that address", addr)
	}
	return nil
}
