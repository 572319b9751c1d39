//go:build linux

package ipmisim

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func platformCheck() error {
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		return fmt.Errorf("ipmisim: cannot read /proc/net/udp to verify port ownership: %w", err)
	}
	return f.Close()
}

// sysProcAttr puts ipmi_sim into its own process group (a terminal's ^C or a
// signal to the test's group does not reach it; Close stops it) and has the
// kernel kill it if the test binary dies without calling Close.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// udpSocketsOnPort returns the inodes of all UDP sockets, IPv4 and IPv6, of
// this network namespace whose local port is port, whatever their address.
func udpSocketsOnPort(port int) ([]uint64, error) {
	var inodes []uint64
	for _, name := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) && name != "/proc/net/udp" {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		first := true
		for sc.Scan() {
			if first { // header
				first = false
				continue
			}
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 {
				continue
			}
			i := strings.LastIndexByte(fields[1], ':')
			if i < 0 {
				continue
			}
			p, err := strconv.ParseUint(fields[1][i+1:], 16, 16)
			if err != nil || int(p) != port {
				continue
			}
			inode, err := strconv.ParseUint(fields[9], 10, 64)
			if err != nil {
				continue
			}
			inodes = append(inodes, inode)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	return inodes, nil
}

// socketInodes returns the inodes of the sockets process pid has open.
func socketInodes(pid int) (map[uint64]bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	inodes := make(map[uint64]bool)
	for _, e := range ents {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		s, ok := strings.CutPrefix(target, "socket:[")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
			inodes[n] = true
		}
	}
	return inodes, nil
}
