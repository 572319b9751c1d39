package store

import (
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// CacheTTL is how long Get keeps a secret it decrypted: the engine asks for
// a node's BMC password at every step of every node, which on etcd is a
// round trip each (a 1,000-node deploy asked about 50,000 times). Put and
// Delete through the same Store forget the name at once; a change written
// by another process (another replica's store, which forwards its writes
// to the leader, or a command run without serve) is seen within CacheTTL.
const CacheTTL = 5 * time.Second

// valueCache keeps decrypted secrets for CacheTTL, by name.
type valueCache struct {
	mu sync.Mutex
	m  map[string]cachedValue
}

type cachedValue struct {
	v  drivers.Secret
	at time.Time
}

func (c *valueCache) get(name string, now time.Time) (drivers.Secret, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[name]
	if !ok || now.Sub(e.at) >= CacheTTL || now.Before(e.at) {
		return drivers.Secret{}, false
	}
	return e.v, true
}

func (c *valueCache) put(name string, v drivers.Secret, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedValue{}
	}
	c.m[name] = cachedValue{v: v, at: now}
}

func (c *valueCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, name)
}
