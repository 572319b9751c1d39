package introspection

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
)

//go:embed bootstrap.sh
var bootstrapScript string

// BootstrapScript returns the POSIX sh script the user data installs as
// /usr/local/sbin/slipway-bootstrap and runs: it fetches the node's self
// data and assets, installs them, and reports every boot action.
func BootstrapScript() string { return bootstrapScript }

// Where the user data puts things on the node.
const (
	EnvFile      = "/etc/slipway/bootstrap.env" // SLIPWAY_URL and SLIPWAY_TOKEN, mode 0600
	HeaderFile   = "/etc/slipway/auth.header"   // "Authorization: Bearer <token>", mode 0600, for curl -H @file
	ScriptPath   = "/usr/local/sbin/slipway-bootstrap"
	cloudConfigH = "#cloud-config\n"
)

type cloudFile struct {
	Path        string `yaml:"path"`
	Owner       string `yaml:"owner"`
	Permissions string `yaml:"permissions"`
	Content     string `yaml:"content"`
}

type cloudConfig struct {
	WriteFiles []cloudFile `yaml:"write_files"`
	RunCmd     []string    `yaml:"runcmd"`
}

// nodeConfig is the node's part of the cloud-config: its names (the short
// host name stays the host name; the FQDN goes to /etc/hosts), the
// site's SSH keys and NTP servers.
type nodeConfig struct {
	Hostname   string     `yaml:"hostname"`
	FQDN       string     `yaml:"fqdn"`
	PreferFQDN bool       `yaml:"prefer_fqdn_over_hostname"`
	SSHKeys    []string   `yaml:"ssh_authorized_keys,omitempty"`
	NTP        *ntpConfig `yaml:"ntp,omitempty"`
}

type ntpConfig struct {
	Enabled bool     `yaml:"enabled"`
	Servers []string `yaml:"servers"`
}

// UserData implements orchestrator.Bootstrapper: it issues the node's
// token for the deployment (replacing the token of its previous
// deployment) and returns the cloud-config that installs and runs the
// bootstrap script. The same deployment gives the same bytes.
func (s *Server) UserData(ctx context.Context, d *design.Design, node, deployment string) ([]byte, error) {
	if d == nil || d.Nodes[node] == nil {
		return nil, drivers.Errorf(drivers.Permanent, "introspection: node %s is not in the design", node)
	}
	rev, err := s.designs.idOf(ctx, d)
	if err != nil {
		return nil, err
	}
	tok, err := s.issue(ctx, node, deployment, rev, s.renderSelf(d, d.Nodes[node], deployment))
	if err != nil {
		return nil, err
	}
	return s.userData(d, selfOf(d, d.Nodes[node], deployment), tok)
}

// maxURLParts bounds the cached user data encodings of the URLs design
// revisions name.
const maxURLParts = 16

// urlOf is the base URL a node deploying with design d is told: the
// Site's introspection.url in d (with SiteURL), else the configured URL.
func (s *Server) urlOf(d *design.Design) (string, error) {
	if !s.cfg.SiteURL || d == nil || d.Site == nil || d.Site.Spec.Introspection.URL == "" {
		return s.baseURL, nil
	}
	u, err := checkURL(d.Site.Spec.Introspection.URL)
	if err != nil {
		return "", drivers.NewError(drivers.Permanent, fmt.Errorf("%w (the Site's introspection.url: fix it in the design and apply it)", err))
	}
	return u, nil
}

// urlParts returns the base URL for d and the user data parts that
// carry it.
func (s *Server) urlParts(d *design.Design) (string, [][]byte, error) {
	u, err := s.urlOf(d)
	if err != nil || u == s.baseURL {
		return u, s.udParts, err
	}
	s.udMu.Lock()
	defer s.udMu.Unlock()
	if p, ok := s.byURL[u]; ok {
		return u, p, nil
	}
	p, err := encodeUserData(u)
	if err != nil {
		return "", nil, err
	}
	if s.byURL == nil || len(s.byURL) >= maxURLParts {
		s.byURL = map[string][][]byte{}
	}
	s.byURL[u] = p
	return u, p, nil
}

// tokenSlot stands for the token in the pre-encoded user data: it has a
// token's characters, so the YAML encoder treats both alike.
var tokenSlot = (TokenPrefix + "TOKENxSLOT" + strings.Repeat("x", TokenLen))[:TokenLen]

// encodeUserData encodes the cloud-config once, with tokenSlot where the
// token goes: the script is a few kilobytes that YAML-encoding every time
// would make the costliest part of UserData.
func encodeUserData(baseURL string) ([][]byte, error) {
	cc := cloudConfig{
		WriteFiles: []cloudFile{
			{Path: EnvFile, Owner: "root:root", Permissions: "0600",
				Content: fmt.Sprintf("SLIPWAY_URL='%s'\nSLIPWAY_TOKEN='%s'\n", baseURL, tokenSlot)},
			{Path: HeaderFile, Owner: "root:root", Permissions: "0600",
				Content: "Authorization: Bearer " + tokenSlot + "\n"},
			{Path: ScriptPath, Owner: "root:root", Permissions: "0755", Content: bootstrapScript},
		},
		RunCmd: []string{ScriptPath},
	}
	b, err := marshalYAML(cc)
	if err != nil {
		return nil, fmt.Errorf("introspection: encode user data: %w", err)
	}
	parts := bytes.Split(b, []byte(tokenSlot))
	if len(parts) != 3 {
		return nil, fmt.Errorf("introspection: encode user data: the token goes %d places, want 2", len(parts)-1)
	}
	return parts, nil
}

// userData is the node's cloud-config holding a token: the node's part,
// then the pre-encoded bootstrap part (both are top-level mappings with
// their own keys, so they concatenate into one), which tells the node
// the base URL of d (urlOf).
func (s *Server) userData(d *design.Design, self Self, tok string) ([]byte, error) {
	_, parts, err := s.urlParts(d)
	if err != nil {
		return nil, err
	}
	nc := nodeConfig{Hostname: self.Hostname, FQDN: self.FQDN, SSHKeys: self.SSHKeys}
	if len(self.NTPServers) > 0 {
		nc.NTP = &ntpConfig{Enabled: true, Servers: self.NTPServers}
	}
	head, err := marshalYAML(nc)
	if err != nil {
		return nil, fmt.Errorf("introspection: encode the user data of node %s: %w", self.Name, err)
	}
	out := make([]byte, 0, len(cloudConfigH)+len(head)+len(parts[0])+len(parts[1])+len(parts[2])+2*len(tok))
	out = append(append(out, cloudConfigH...), head...)
	return append(out, bytes.Join(parts, []byte(tok))...), nil
}

// EndDeployment implements orchestrator.Bootstrapper: the node's machine
// was released, so its token is revoked (later calls get 401) and its
// reports are dropped (the event log keeps them).
func (s *Server) EndDeployment(ctx context.Context, node string) error {
	return s.revoke(ctx, node)
}

var _ orchestrator.Bootstrapper = (*Server)(nil)

// Warm implements orchestrator.BootstrapWarmer: the revision of d is
// computed and checked stored now (designCache.idOf), so that the first
// UserData of a deployment of thousands does not hold the others while
// it encodes the design. An error is UserData's to report.
func (s *Server) Warm(ctx context.Context, d *design.Design) {
	if d != nil {
		_, _ = s.designs.idOf(ctx, d)
	}
}

var _ orchestrator.BootstrapWarmer = (*Server)(nil)
