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
	tok, err := s.issue(ctx, node, deployment, rev)
	if err != nil {
		return nil, err
	}
	return s.userData(tok), nil
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
	parts := bytes.Split(append([]byte(cloudConfigH), b...), []byte(tokenSlot))
	if len(parts) != 3 {
		return nil, fmt.Errorf("introspection: encode user data: the token goes %d places, want 2", len(parts)-1)
	}
	return parts, nil
}

// userData is the cloud-config holding a token.
func (s *Server) userData(tok string) []byte {
	return bytes.Join(s.udParts, []byte(tok))
}

// EndDeployment implements orchestrator.Bootstrapper: the node's machine
// was released, so its token is revoked (later calls get 401) and its
// reports are dropped (the event log keeps them).
func (s *Server) EndDeployment(ctx context.Context, node string) error {
	return s.revoke(ctx, node)
}

var _ orchestrator.Bootstrapper = (*Server)(nil)
