package ovs

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// maxAddress bounds a switch address setting.
const maxAddress = 512

// parseAddress checks an OVSDB address: "unix:/absolute/path" or
// "tcp:HOST:PORT" (an IPv6 host in brackets), and returns it as
// libovsdb takes it. ssl: is not supported (yet): say so rather than
// connect in the clear.
func parseAddress(a string) (string, error) {
	if len(a) > maxAddress {
		return "", fmt.Errorf("address is %d bytes, more than %d", len(a), maxAddress)
	}
	scheme, rest, ok := strings.Cut(a, ":")
	if !ok {
		return "", fmt.Errorf("address %q has no scheme (unix:/path or tcp:host:port)", a)
	}
	switch scheme {
	case "unix":
		if !filepath.IsAbs(rest) || filepath.Clean(rest) != rest || strings.ContainsAny(rest, "\x00\n") {
			return "", fmt.Errorf("address %q: a unix socket's path must be absolute and clean", a)
		}
		return a, nil
	case "tcp":
		host, p, err := net.SplitHostPort(rest)
		if err != nil {
			return "", fmt.Errorf("address %q: %v (tcp:host:port)", a, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("address %q: port %q is not 1..65535", a, p)
		}
		if host == "" || strings.ContainsAny(host, "/ \t\n\x00@?#") {
			return "", fmt.Errorf("address %q: host %q is not a host name or address", a, host)
		}
		return "tcp:" + net.JoinHostPort(host, strconv.Itoa(n)), nil
	case "ssl":
		return "", fmt.Errorf("address %q: ssl: is not supported by this driver; use a unix socket on the switch or tcp: on a management network", a)
	}
	return "", fmt.Errorf("address %q: unknown scheme %q (unix or tcp)", a, scheme)
}
