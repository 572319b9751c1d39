package design

import (
	"regexp"
	"strings"
)

// isDNSLabel reports whether s is an RFC 1123 DNS label as Kubernetes
// defines it: 1..63 of [a-z0-9-], starting and ending alphanumeric.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// hostnameProblem explains why s is not a valid hostname, or returns "".
func hostnameProblem(s string) string {
	if strings.Contains(s, "_") {
		return "'_' is not allowed in hostnames; use '-'"
	}
	for _, label := range strings.Split(s, ".") {
		if !isDNSLabel(strings.ToLower(label)) {
			return "each dot-separated label must be 1 to 63 characters a-z, 0-9 and '-', starting and ending with a letter or digit"
		}
	}
	return ""
}

var macRE = regexp.MustCompile(`^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$`)

// normalMAC returns the MAC in lower case with colons, or "" if s is not a
// 48-bit MAC address written with one separator throughout.
func normalMAC(s string) string {
	if !macRE.MatchString(s) || (strings.Contains(s, ":") && strings.Contains(s, "-")) {
		return ""
	}
	return strings.ToLower(strings.ReplaceAll(s, "-", ":"))
}

var (
	pciAddrRE    = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)
	kernelNameRE = regexp.MustCompile(`^(/dev/|eth\d|en[a-z0-9]|eno\d|ib\d|bond\d|sd[a-z]|vd[a-z]|xvd[a-z]|hd[a-z]|nvme\d|mmcblk\d|md\d)`)
	permsRE      = regexp.MustCompile(`^0?[0-7]{3,4}$`)
)
