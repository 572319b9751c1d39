//go:build !linux

package api

import (
	"errors"
	"net"
)

// peerUID needs SO_PEERCRED (Linux): elsewhere the local socket admits
// nobody.
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are read on Linux only")
}

func umask(m int) int { return m }
