package ovs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ifNameMax is the longest Linux interface name (IFNAMSIZ 16 with its NUL).
const ifNameMax = 15

// Name is a name no other harness uses: up to 4 characters of hint, this
// Switchd's random id and a counter; at most 15 characters (an
// interface name's bound). It fails past 9,999 names.
func (s *Switchd) Name(hint string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n >= 9999 {
		return "", errors.New("open vswitch harness: more than 9,999 names from one harness")
	}
	s.n++
	if len(hint) > 4 {
		hint = hint[:4]
	}
	return hint + s.id + strconv.Itoa(s.n), nil
}

// NewNetns creates a network namespace with a unique name starting with
// prefix (up to 4 characters of it), its loopback up, and registers it
// for Close.
func (s *Switchd) NewNetns(prefix string) (string, error) {
	name, err := s.Name(prefix)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	if _, err := s.run(ctx, "ip", "netns", "add", name); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.netns = append(s.netns, name)
	s.mu.Unlock()
	if _, err := s.run(ctx, "ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		return "", err
	}
	return name, nil
}

// Veth creates a veth pair with ends a and b in the switch namespace NS
// (a switch port is a's name on a bridge of this Switchd) and registers
// it for Close. Move an end elsewhere with MoveTo.
func (s *Switchd) Veth(ctx context.Context, a, b string) error {
	for _, n := range []string{a, b} {
		if n == "" || len(n) > ifNameMax || strings.ContainsAny(n, "/ \t\n:") {
			return fmt.Errorf("open vswitch harness: %q is not an interface name (1 to %d characters, no '/', ':' or space)", n, ifNameMax)
		}
	}
	if _, err := s.run(ctx, "ip", "-n", s.NS, "link", "add", a, "type", "veth", "peer", "name", b); err != nil {
		return err
	}
	s.mu.Lock()
	s.links = append(s.links, link{ns: s.NS, name: a})
	s.mu.Unlock()
	return nil
}

// MoveTo moves interface dev from namespace from to namespace to
// (either "" for the switch namespace NS).
func (s *Switchd) MoveTo(ctx context.Context, from, dev, to string) error {
	_, err := s.run(ctx, "ip", "-n", s.ns(from), "link", "set", dev, "netns", s.ns(to))
	return err
}

// Addr adds the address cidr (10.1.0.10/24) to dev in namespace ns.
func (s *Switchd) Addr(ctx context.Context, ns, dev, cidr string) error {
	_, err := s.run(ctx, "ip", "-n", s.ns(ns), "addr", "add", cidr, "dev", dev)
	return err
}

// SetMTU sets dev's MTU in namespace ns.
func (s *Switchd) SetMTU(ctx context.Context, ns, dev string, mtu int) error {
	_, err := s.run(ctx, "ip", "-n", s.ns(ns), "link", "set", dev, "mtu", strconv.Itoa(mtu))
	return err
}

// Up sets dev up in namespace ns ("" for NS).
func (s *Switchd) Up(ctx context.Context, ns, dev string) error {
	_, err := s.run(ctx, "ip", "-n", s.ns(ns), "link", "set", dev, "up")
	return err
}

// Down sets dev down in namespace ns ("" for NS): its veth peer loses
// carrier, as a pulled cable.
func (s *Switchd) Down(ctx context.Context, ns, dev string) error {
	_, err := s.run(ctx, "ip", "-n", s.ns(ns), "link", "set", dev, "down")
	return err
}

// IP runs ip with args in namespace ns ("" for NS) and returns its output.
func (s *Switchd) IP(ctx context.Context, ns string, args ...string) (string, error) {
	return s.run(ctx, "ip", append([]string{"-n", s.ns(ns)}, args...)...)
}

func (s *Switchd) ns(ns string) string {
	if ns == "" {
		return s.NS
	}
	return ns
}

// Ping pings from namespace ns to addr, one packet per 0.2 s, and
// reports whether one was answered: it returns at the first answer, and
// with none it sends on until timeout.
func (s *Switchd) Ping(ctx context.Context, ns, addr string, timeout time.Duration) bool {
	n, _ := s.PingCount(ctx, ns, addr, 1, timeout)
	return n > 0
}

var receivedRE = regexp.MustCompile(`(\d+) received`)

// pingStartSlack bounds how long ip netns exec and ping may take to
// start, beyond ping's deadline.
const pingStartSlack = 5 * time.Second

// PingCount sends pings (one per 0.2 s, each waiting up to 1 s) from
// namespace ns to addr until count (at most 20) are answered or timeout
// passes, and answers how many were, and ping's output. The timeout is
// ping's own deadline; starting ip and ping may take pingStartSlack more
// on a loaded machine (many pings at once) without eating into it.
func (s *Switchd) PingCount(ctx context.Context, ns, addr string, count int, timeout time.Duration) (int, string) {
	count = min(max(count, 1), 20)
	ctx, cancel := context.WithTimeout(ctx, timeout+pingStartSlack)
	defer cancel()
	deadline := max(int(timeout/time.Second), 1)
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", s.ns(ns), "ping", "-n", "-q", "-c", strconv.Itoa(count),
		"-i", "0.2", "-W", "1", "-w", strconv.Itoa(deadline), addr)
	cmd.WaitDelay = time.Second
	out, _ := cmd.CombinedOutput()
	m := receivedRE.FindSubmatch(out)
	if m == nil {
		return 0, string(out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n, string(out)
}

// deleteNet deletes the veth pairs and then the namespaces s created
// (deleting a namespace destroys the veth ends in it).
func (s *Switchd) deleteNet() []error {
	s.mu.Lock()
	links, netns := s.links, s.netns
	s.links, s.netns = nil, nil
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, l := range slices.Backward(links) {
		if _, err := s.run(ctx, "ip", "-n", l.ns, "link", "del", l.name); err != nil && !gone(err) {
			errs = append(errs, err)
		}
	}
	for _, n := range slices.Backward(netns) {
		if _, err := s.run(ctx, "ip", "netns", "del", n); err != nil && !gone(err) {
			errs = append(errs, err)
		}
	}
	return errs
}

// gone reports an ip error saying the device or namespace is not there
// (deleted with its peer or its namespace).
func gone(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Cannot find device") || strings.Contains(m, "No such file") ||
		strings.Contains(m, "Invalid \"netns\" value") || strings.Contains(m, "does not exist")
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// Cable creates a veth pair whose end port is a port of bridge (added
// with ovs-vsctl, and extra its column settings such as "tag=10") and
// whose other end, a unique name it returns, is moved into namespace
// ns ("" keeps it in NS: a cabled port with nothing behind it); both
// ends are set up.
func (s *Switchd) Cable(ctx context.Context, bridge, port, ns string, extra ...string) (string, error) {
	peer, err := s.Name("v")
	if err != nil {
		return "", err
	}
	if err := s.Veth(ctx, port, peer); err != nil {
		return "", err
	}
	if _, err := s.Vsctl(ctx, append([]string{"add-port", bridge, port}, extra...)...); err != nil {
		return "", err
	}
	if ns != "" {
		if err := s.MoveTo(ctx, "", peer, ns); err != nil {
			return "", err
		}
	}
	if err := s.Up(ctx, "", port); err != nil {
		return "", err
	}
	return peer, s.Up(ctx, ns, peer)
}
