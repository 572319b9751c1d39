//go:build !linux

package ipmisim

import (
	"errors"
	"syscall"
)

var errNotLinux = errors.New("ipmisim: needs Linux (procfs is used to verify port ownership)")

func platformCheck() error                      { return errNotLinux }
func sysProcAttr() *syscall.SysProcAttr         { return nil }
func udpSocketsOnPort(int) ([]uint64, error)    { return nil, errNotLinux }
func socketInodes(int) (map[uint64]bool, error) { return nil, errNotLinux }
