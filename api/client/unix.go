package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// WithUnixSocket sends every request to the Unix socket at path instead of
// dialling the URL's host: a local `orchestrator serve` listens on one
// beside its state database, where the kernel names the caller (its peer
// credentials) and no token is needed. Give New any http:// base URL.
func WithUnixSocket(path string) Option {
	return func(c *config) error {
		if path == "" {
			return errors.New("client: empty Unix socket path")
		}
		d := &net.Dialer{Timeout: 10 * time.Second}
		tr := &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "unix", path)
			},
			MaxIdleConns: 4, IdleConnTimeout: 30 * time.Second, ResponseHeaderTimeout: c.timeout,
		}
		c.hc = &http.Client{Transport: tr}
		return nil
	}
}
