package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/server"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// StoreConfig is where a demo keeps its state: the bbolt file State, or,
// when Store (etcd://HOST:PORT,...) is set, etcd under EtcdPrefix, whose
// members were started with EtcdLimits.
type StoreConfig struct {
	State, Store, EtcdPrefix string
	EtcdLimits               etcdstore.Limits
}

// etcdAnswerWithin bounds how long OpenStore waits for etcd to answer.
const etcdAnswerWithin = 10 * time.Second

// OpenStore opens the demo's state store; etcd must answer within 10 s.
// kind is "bolt" or "etcd".
func OpenStore(ctx context.Context, c StoreConfig) (st statestore.Store, kind string, err error) {
	if c.Store == "" {
		st, err := bolt.Open(c.State, bolt.Options{})
		return st, "bolt", err
	}
	ccfg, err := server.Config{HAConfig: server.HAConfig{Store: c.Store, EtcdMaxRequestBytes: c.EtcdLimits.MaxRequestBytes}}.EtcdClientConfig()
	if err != nil {
		return nil, "", err
	}
	eps := ccfg.Endpoints
	es, err := etcdstore.Open(ccfg, c.EtcdPrefix)
	if err != nil {
		return nil, "", err
	}
	if err := es.SetLimits(c.EtcdLimits); err != nil {
		es.Close()
		return nil, "", err
	}
	pctx, cancel := context.WithTimeout(ctx, etcdAnswerWithin)
	defer cancel()
	if _, _, err := es.Names(pctx); err != nil {
		es.Close()
		return nil, "", fmt.Errorf("etcd %v: %w", eps, err)
	}
	return es, "etcd", nil
}
