// Package etcdtest starts real etcd servers (Debian's etcd-server) for
// tests, on loopback ports, each in a temporary data directory, stopped
// (SIGKILL: nothing of theirs is kept) when the test ends.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/internal/testtool"
)

// Member is one running etcd server.
type Member struct {
	Name      string
	ClientURL string
	cmd       *exec.Cmd
	out       *testtool.SyncBuffer
	bin       string
	args      []string // to start it again on its data directory
	peerURL   string
}

// Stop kills the member (SIGKILL), as a crash would.
func (m *Member) Stop() {
	if m.cmd.Process != nil {
		_ = m.cmd.Process.Kill()
		_ = m.cmd.Wait()
	}
}

// Restart starts a stopped member again on its data directory: it
// rejoins the cluster.
func (m *Member) Restart(t testing.TB) {
	t.Helper()
	m.cmd = exec.Command(m.bin, m.args...)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("restart etcd %s: %v", m.Name, err)
	}
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Members []*Member
	TLS     *TLSFiles // nil: plain http
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = m.ClientURL
	}
	return out
}

// Client is a client of the cluster, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cl := c.newClient(t)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// newClient is a client of the cluster; the caller closes it.
func (c *Cluster) newClient(t testing.TB) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second}
	if c.TLS != nil {
		cfg.TLS = c.TLS.clientConfig(t)
	}
	cl, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// Start runs an etcd cluster of n members on loopback, with Slipway's
// settings, and waits until it answers.
func Start(t testing.TB, n int) *Cluster { return StartArgs(t, n) }

// StartArgs is Start with more etcd flags (a later flag wins).
func StartArgs(t testing.TB, n int, extra ...string) *Cluster {
	t.Helper()
	return start(t, n, nil, extra)
}

// StartTLS is Start with the members' client URLs on TLS, client
// certificates required (a CA of the test's own signs every certificate).
func StartTLS(t testing.TB, n int) *Cluster {
	t.Helper()
	return start(t, n, newTLSFiles(t), nil)
}

// freePorts picks loopback ports; a test replaces it to hand out a
// port that is taken.
var freePorts = testtool.FreePorts

// bindAttempts bounds how often a cluster is started again on new ports
// when a member could not bind one: another test's process can take a
// port between FreePorts closing it and etcd binding it.
const bindAttempts = 4

func start(t testing.TB, n int, tf *TLSFiles, extra []string) *Cluster {
	t.Helper()
	bin := testtool.Need(t, "etcd", "etcd-server")
	if tf != nil {
		extra = append([]string{"--cert-file", tf.ServerCert, "--key-file", tf.ServerKey, "--client-cert-auth", "--trusted-ca-file", tf.CA}, extra...)
	}
	for attempt := 1; ; attempt++ {
		c := launch(t, bin, n, tf, extra)
		err := c.waitReady(t)
		if err == nil {
			return c
		}
		if !errors.Is(err, errPortTaken) || attempt == bindAttempts {
			t.Fatalf("etcd did not answer within 30 s (start %d of %d): %v\n%s", attempt, bindAttempts, err, c.output())
		}
		t.Logf("etcd start %d of %d: %v; starting again on other ports", attempt, bindAttempts, err)
		for _, m := range c.Members {
			m.Stop()
		}
	}
}

// launch starts n members on fresh loopback ports.
func launch(t testing.TB, bin string, n int, tf *TLSFiles, extra []string) *Cluster {
	t.Helper()
	scheme := "http"
	if tf != nil {
		scheme = "https"
	}
	ports := freePorts(t, 2*n)
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	c := &Cluster{TLS: tf}
	for i := range n {
		m := &Member{Name: fmt.Sprintf("m%d", i), ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[2*i]), out: &testtool.SyncBuffer{}}
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		m.peerURL = peer
		m.bin, m.args = bin, []string{"--name", m.Name, "--data-dir", t.TempDir(),
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "slipway-test", "--log-level", "warn"} // etcd's own limits: Slipway needs none raised
		m.args = append(m.args, extra...)
		m.Restart(t)
		t.Cleanup(func() { m.Stop() })
		c.Members = append(c.Members, m)
	}
	return c
}

var errPortTaken = errors.New("a member could not bind its port")

// waitReady waits up to 30 s for the cluster to answer a read; it stops
// early with errPortTaken when a member reports its port in use. Its
// client is closed on return, so an abandoned start leaves none retrying.
func (c *Cluster) waitReady(t testing.TB) error {
	t.Helper()
	cl := c.newClient(t)
	defer cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cl.Get(ctx, "health")
		cancel()
		if err == nil {
			err = c.checkMembers(cl)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errPortTaken), strings.Contains(c.output(), "address already in use"):
			return errPortTaken
		case time.Now().After(deadline):
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkMembers makes sure the cluster that answered is this one: when a
// member's client port was taken by another test's etcd, that etcd
// answers, with its own members' peer URLs.
func (c *Cluster) checkMembers(cl *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := cl.MemberList(ctx)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, m := range c.Members {
		want[m.peerURL] = true
	}
	for _, m := range resp.Members {
		for _, u := range m.PeerURLs {
			if !want[u] {
				return fmt.Errorf("%w: a cluster with peer %s answered", errPortTaken, u)
			}
		}
	}
	return nil
}

// output is every member's log so far.
func (c *Cluster) output() string {
	var b strings.Builder
	for _, m := range c.Members {
		fmt.Fprintf(&b, "[%s]\n%s", m.Name, m.out.String())
	}
	return b.String()
}
