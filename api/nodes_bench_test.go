package api_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// listBenchNodes is the size of the site BenchmarkListNodes lists (as
// bench-scale's 2,000-node runs).
const listBenchNodes = 2000

// BenchmarkListNodes: GET /nodes over 2,000 deployed nodes (each with a
// node record of a finished deploy), all of them (as `orchestrator nodes`
// and the bench read them at the end) and a page of 100 (as `deploy
// --server` follows progress). Reports bytes allocated per node listed
// (B/op over the site's nodes) besides the usual figures.
func BenchmarkListNodes(b *testing.B) {
	ts := listBenchServer(b)
	for _, c := range []struct{ name, query string }{
		{"all", "?limit=10000"},
		{"page", "?offset=1000&limit=100"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if code := request(b, "GET", ts.URL+"/api/v1/nodes"+c.query, nil); code != 200 {
					b.Fatalf("status %d", code)
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/listBenchNodes, "B/node")
		})
	}
}

// listBenchServer serves the API over a stored 2,000-node design whose
// nodes all have the record a deploy leaves.
func listBenchServer(b *testing.B) *httptest.Server {
	b.Helper()
	return benchServerWith(b, listBenchNodes, func(st statestore.Store, d *design.Design) {
		ops := make([]statestore.Op, 0, listBenchNodes)
		for i, name := range d.NodeNames() {
			ops = append(ops, statestore.Put("nodes", name, deployedRecord(b, name, i)))
		}
		if _, err := st.Write(b.Context(), ops...); err != nil {
			b.Fatal(err)
		}
	})
}

// deployedRecord is the stored record (storedrec's versioned JSON) of a
// node a deploy took through its stages.
func deployedRecord(b *testing.B, name string, i int) []byte {
	b.Helper()
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	r := record.NodeRecord{Name: name, MachineID: fmt.Sprintf("m%05x", i), Observed: "Deployed", Lifecycle: record.LifecycleDeployed,
		LastTask: "t-1", Action: record.ActionDeployNodes, Stage: record.StageDeployed, Outcome: record.OutcomeSucceeded,
		Deployment: 1, DeploymentEnded: true, Updated: at}
	from := record.StagePending
	for _, to := range []record.Stage{record.StageVerify, record.StageOOBPrepare, record.StageIdentify, record.StageCommission,
		record.StageAsBuilt, record.StageConfigure, record.StageDeploy, record.StageBootstrap, record.StageDeployed} {
		r.AddHistory(record.Transition{At: at, Task: "t-1", From: from, To: to, Message: "stage " + string(to) + " of node " + name})
		from = to
	}
	raw, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	return append([]byte(`{"v":`+strconv.Itoa(storedrec.Current)+`,`), raw[1:]...)
}
