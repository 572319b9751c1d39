package main

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/server"
)

// Temporary: the names demo.go used before the composition of serve moved
// to package server; removed once demo.go calls server directly.

func etcdEndpoints(s string) ([]string, error) { return server.EtcdEndpoints(s) }

type haConfig = server.HAConfig

type engineConfig struct{ haConfig }

func (c engineConfig) etcdClientConfig() (clientv3.Config, error) {
	return server.Config{HAConfig: c.haConfig}.EtcdClientConfig()
}
