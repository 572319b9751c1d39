package ha

import (
	"context"
	"net/url"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// Lone is a server alone on its state file (bbolt): a group of one, which
// leads from its start.
type Lone struct {
	Name, URL, Path string
	Started         time.Time
}

// Cluster is the group of one.
func (l Lone) Cluster(context.Context) (apitypes.Cluster, error) {
	self := apitypes.Replica{ID: l.Name, Role: RoleLeader, URL: l.URL, Started: l.Started}
	return apitypes.Cluster{Self: self, Leader: &apitypes.LeaderInfo{ID: l.Name, URL: l.URL, Since: l.Started},
		Replicas: []apitypes.Replica{self}, Store: apitypes.ClusterStore{Kind: "bolt", Path: l.Path, Writable: true}}, nil
}

// Leader is always this server.
func (l Lone) Leader() (bool, string, *url.URL) { return true, l.Name, nil }

// ID is the server's.
func (l Lone) ID() string { return l.Name }
