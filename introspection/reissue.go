package introspection

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
)

// Reissue implements orchestrator.Bootstrapper: the node gets a new
// token for the deployment (the next reissue's), issued from d's
// revision; the previous token is revoked and the node's reports are
// dropped (the event log keeps them), so its bootstrap starts over. It
// returns the user data with the new token and the bootstrap environment
// file it writes; the provisioner delivers user data only at deploy, so
// these reach the node through an operator.
func (s *Server) Reissue(ctx context.Context, d *design.Design, node, deployment string) (orchestrator.Reissued, error) {
	if d == nil || d.Nodes[node] == nil {
		return orchestrator.Reissued{}, drivers.Errorf(drivers.Permanent, "introspection: node %s is not in the design", node)
	}
	if err := checkName("deployment", deployment); err != nil {
		return orchestrator.Reissued{}, drivers.NewError(drivers.Permanent, err)
	}
	rev, err := s.designs.idOf(ctx, d)
	if err != nil {
		return orchestrator.Reissued{}, err
	}
	if err := s.reissue(ctx, node, deployment, rev, s.renderSelf(d, d.Nodes[node], deployment)); err != nil {
		return orchestrator.Reissued{}, err
	}
	ud, err := s.UserData(ctx, d, node, deployment) // the reissued token, as recorded
	if err != nil {
		return orchestrator.Reissued{}, err
	}
	env, err := envOf(ud)
	if err != nil {
		return orchestrator.Reissued{}, err
	}
	return orchestrator.Reissued{Env: env, UserData: ud}, nil
}

// reissue records the token of the deployment's next issue, with self,
// its /v1/self answer rendered from revision (kept in the record).
func (s *Server) reissue(ctx context.Context, node, deployment, revision string, self []byte) error {
	unlock := s.locks.lock(node)
	defer unlock()
	old, cur, _, err := s.currentRecord(ctx, node)
	if err != nil {
		return err
	}
	rec := tokenRecord{Node: node, Deployment: deployment, Revision: revision, Issued: statestore.StoreTime(time.Now()), Issue: 1}
	if cur != nil && cur.Deployment == deployment {
		rec.Issue = cur.Issue + 1
	}
	h := hashToken(s.tokenOf(rec))
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ops := []statestore.Op{statestore.Put(collTokens, h, withSelf(raw, self)), statestore.Put(collTokenOf, node, []byte(h))}
	if old != "" {
		ops = append(ops, statestore.Delete(collTokens, old))
	}
	stale, err := s.reportKeys(ctx, node, func(string) bool { return true })
	if err != nil {
		return err
	}
	for _, k := range stale {
		ops = append(ops, statestore.Delete(collReports, k))
	}
	if _, err := s.store.Write(ctx, ops...); err != nil {
		return drivers.NewError(drivers.Transient, fmt.Errorf("store the reissued token of node %s: %w", node, err))
	}
	s.tokens.forget(old, h)
	return nil
}

// envOf returns the bootstrap environment file the user data writes.
func envOf(userData []byte) ([]byte, error) {
	var cc struct {
		WriteFiles []struct {
			Path    string `yaml:"path"`
			Content string `yaml:"content"`
		} `yaml:"write_files"`
	}
	if err := yaml.Unmarshal(userData, &cc); err != nil {
		return nil, fmt.Errorf("introspection: read back the user data: %w", err)
	}
	for _, f := range cc.WriteFiles {
		if f.Path == EnvFile {
			return []byte(f.Content), nil
		}
	}
	return nil, fmt.Errorf("introspection: the user data writes no %s", EnvFile)
}
