// Package powercreds keeps per-node BMC (power) credential overrides: a
// username and password that the engine's out-of-band calls (IPMI,
// Redfish) and the provisioner's power settings use for one node instead
// of the design's oob.credentials. An admin writes them through the API
// (PUT /api/v1/admin/nodes/{name}/power-credentials); they are never
// read back out.
//
// # Layout
//
// An override is one secret of the encrypted secret store
// (secrets/store), named SecretName(node) (Prefix and the node's name),
// whose value is JSON {"username", "password", "version", "rotated"}.
// Designs and the secret routes can't name these secrets (Reserved).
package powercreds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/secrets/store"
)

// Prefix starts the names of the secrets that hold overrides.
const Prefix = "bmc-override."

// Bounds of an override (IPMI carries at most 16-byte user names and
// 20-byte passwords; Redfish BMCs take longer ones).
const (
	MaxUsernameLen = 64
	MaxPasswordLen = 256
	MaxNodeLen     = 253
)

// ErrNotFound is wrapped by the errors about a node without an override;
// ErrInvalid by those about an override that can't be stored as given.
var (
	ErrNotFound = errors.New("no power-credential override")
	ErrInvalid  = errors.New("invalid power-credential override")
)

// Reserved reports whether a secret name holds an override.
func Reserved(name string) bool { return strings.HasPrefix(strings.ToLower(name), Prefix) }

var nodeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// SecretName is the secret that holds node's override: Prefix and the
// name, or, for a name the secret store can't hold (too long, upper
// case), Prefix, "x-" and a digest of the name.
func SecretName(node string) string {
	if n := Prefix + node; store.ValidateName(n) == nil {
		return n
	}
	sum := sha256.Sum256([]byte(node))
	return Prefix + "x-" + hex.EncodeToString(sum[:20])
}

// Info is what may be told about an override: that it is set, how many
// times it was written, when last. Never the username or the password.
type Info struct {
	Node    string    `json:"node"`
	Set     bool      `json:"set"`
	Version int       `json:"version"`
	Rotated time.Time `json:"rotated"`
}

// Credentials are an override's username and password.
type Credentials struct {
	Username string
	Password drivers.Secret
}

// Secrets is the part of the secret store the overrides use (a
// *store.Store). Get and Delete wrap store.ErrNotFound for a name not
// stored.
type Secrets interface {
	Put(ctx context.Context, name, value string) error
	Get(ctx context.Context, name string) (drivers.Secret, error)
	Delete(ctx context.Context, name string) error
}

// Overrides reads and writes the overrides in a secret store.
type Overrides struct {
	sec Secrets
	now func() time.Time
	mu  sync.Mutex // one write at a time: a rotation counts the versions
}

// New keeps the overrides in sec.
func New(sec Secrets) *Overrides { return &Overrides{sec: sec, now: time.Now} }

// value is the stored JSON.
type value struct {
	Username string    `json:"username"`
	Password string    `json:"password"`
	Version  int       `json:"version"`
	Rotated  time.Time `json:"rotated"`
}

// CheckNode checks a node name an override is asked for.
func CheckNode(node string) error {
	if len(node) > MaxNodeLen || !nodeRE.MatchString(node) {
		return fmt.Errorf("%w: a node name is 1 to %d characters A-Z, a-z, 0-9, '.', '_' and '-'", ErrInvalid, MaxNodeLen)
	}
	return nil
}

// check checks an override's fields; its error never holds the password.
func check(node, username, password string) error {
	if err := CheckNode(node); err != nil {
		return err
	}
	var probs []string
	if username == "" || len(username) > MaxUsernameLen || strings.ContainsAny(username, "\x00\r\n") {
		probs = append(probs, fmt.Sprintf("username: 1 to %d bytes, one line", MaxUsernameLen))
	}
	if password == "" || len(password) > MaxPasswordLen {
		probs = append(probs, fmt.Sprintf("password: 1 to %d bytes", MaxPasswordLen))
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w for node %s: %s", ErrInvalid, node, strings.Join(probs, "; "))
	}
	return nil
}

// Put writes (or rotates) node's override: its version is one more than
// the one it replaces.
func (o *Overrides) Put(ctx context.Context, node, username, password string) (Info, error) {
	if err := check(node, username, password); err != nil {
		return Info{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, err := o.read(ctx, node)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Info{}, err
	}
	v := value{Username: username, Password: password, Version: prev.Version + 1, Rotated: o.now().UTC().Truncate(time.Millisecond)}
	b, err := json.Marshal(v)
	if err != nil {
		return Info{}, fmt.Errorf("node %s: encode the power-credential override: %w", node, err)
	}
	if err := o.sec.Put(ctx, SecretName(node), string(b)); err != nil {
		return Info{}, fmt.Errorf("node %s: store the power-credential override: %w", node, err)
	}
	return Info{Node: node, Set: true, Version: v.Version, Rotated: v.Rotated}, nil
}

// Info tells whether node has an override, its version and when it was
// last written; the error wraps ErrNotFound when it has none.
func (o *Overrides) Info(ctx context.Context, node string) (Info, error) {
	v, err := o.read(ctx, node)
	if err != nil {
		return Info{}, err
	}
	return Info{Node: node, Set: true, Version: v.Version, Rotated: v.Rotated}, nil
}

// Delete removes node's override (the design's credentials apply again);
// the error wraps ErrNotFound when it has none.
func (o *Overrides) Delete(ctx context.Context, node string) error {
	if err := CheckNode(node); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	err := o.sec.Delete(ctx, SecretName(node))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: node %s has none", ErrNotFound, node)
	}
	return err
}

// Lookup is node's override; ok is false when it has none (a name no
// override can be written for has none).
func (o *Overrides) Lookup(ctx context.Context, node string) (c Credentials, ok bool, err error) {
	if CheckNode(node) != nil {
		return Credentials{}, false, nil
	}
	v, err := o.read(ctx, node)
	if errors.Is(err, ErrNotFound) {
		return Credentials{}, false, nil
	}
	if err != nil {
		return Credentials{}, false, err
	}
	return Credentials{Username: v.Username, Password: drivers.NewSecret(v.Password)}, true, nil
}

// read decrypts node's override.
func (o *Overrides) read(ctx context.Context, node string) (value, error) {
	if err := CheckNode(node); err != nil {
		return value{}, err
	}
	s, err := o.sec.Get(ctx, SecretName(node))
	if errors.Is(err, store.ErrNotFound) {
		return value{}, fmt.Errorf("%w: node %s has none", ErrNotFound, node)
	}
	if err != nil {
		return value{}, fmt.Errorf("node %s: read the power-credential override: %w", node, err)
	}
	var v value
	if err := json.Unmarshal([]byte(s.Reveal()), &v); err != nil || v.Username == "" || v.Password == "" {
		// Not the decoder's error: it could quote the value.
		return value{}, fmt.Errorf("node %s: the power-credential override is unreadable: write it again (PUT /api/v1/admin/nodes/%s/power-credentials)", node, node)
	}
	return v, nil
}

// BMC is Lookup in the form the engine takes (orchestrator.Config's
// BMCOverride).
func (o *Overrides) BMC(ctx context.Context, node string) (username string, password drivers.Secret, ok bool, err error) {
	c, ok, err := o.Lookup(ctx, node)
	return c.Username, c.Password, ok, err
}
