package main

import (
	"errors"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/api/client"
)

// remoteOpts point the CLI at an orchestrator's API (embedded in app).
type remoteOpts struct {
	server, token, caFile string
}

// Environment variables behind the remote flags.
const (
	envServer = "SLIPWAY_SERVER"
	envToken  = "SLIPWAY_TOKEN"
	envCAFile = "SLIPWAY_CA_FILE"
)

// remoteFlags adds --server, --token and --ca-file to root.
func (a *app) remoteFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	// The token's default is never the environment's value: cobra would
	// print it in --help.
	pf.StringVar(&a.server, "server", "", "URL of an orchestrator's API, e.g. https://slipway.example:8443 (env "+envServer+"); "+
		"without it, commands talk to the serve on the socket beside --state, or run the engine and API in process")
	pf.StringVar(&a.token, "token", "", "bearer token for --server (env "+envToken+", which keeps it out of the process list)")
	pf.StringVar(&a.caFile, "ca-file", "", "PEM certificates trusted for an https --server besides the system's (env "+envCAFile+")")
}

// remote is the API client the flags or the environment ask for; nil, nil
// when no server is set.
func (a *app) remote() (*client.Client, error) {
	server := strings.TrimSpace(orDefault(a.server, os.Getenv(envServer)))
	if server == "" {
		return nil, nil
	}
	token := strings.TrimSpace(orDefault(a.token, os.Getenv(envToken)))
	if token == "" {
		return nil, errors.New("--server needs an API token: pass --token or set " + envToken)
	}
	var opts []client.Option
	if ca := orDefault(a.caFile, os.Getenv(envCAFile)); ca != "" {
		opts = append(opts, client.WithCAFile(ca))
	}
	c, err := client.New(server, token, opts...)
	if err != nil {
		return nil, err
	}
	if u, err := url.Parse(c.BaseURL()); err == nil && u.Scheme == "http" && !loopback(u.Hostname()) {
		a.log.Warn().Str("server", u.Redacted()).Msg("the API token goes over plain http: use https beyond this host")
	}
	return c, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
