package gitsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// storeApplier is the test's apply: it reads the directory with the
// design loader (malformed YAML: findings with file:line), holds a
// design whose files hold "destroy: true" unless approved (one holding
// "bindings: true" too changes credential bindings), and stores
// the rest as a revision of a real state store, its ID the content's
// address.
type storeApplier struct {
	st    statestore.Store
	mu    sync.Mutex
	calls []ApplyRequest
}

func (a *storeApplier) ApplyDir(ctx context.Context, req ApplyRequest) (ApplyResult, error) {
	a.mu.Lock()
	a.calls = append(a.calls, req)
	a.mu.Unlock()
	res, err := yamlingest.Load(ctx, []string{req.Dir})
	if err != nil {
		return ApplyResult{}, err
	}
	if design.Findings(res.Findings).HasErrors() {
		var out []string
		for _, f := range res.Findings {
			out = append(out, fmt.Sprintf("%s:%d: %s", strings.TrimPrefix(f.File, req.Dir+"/"), f.Line, f.Message))
		}
		return ApplyResult{Result: ResultInvalid, Findings: out}, nil
	}
	h := sha256.New()
	destroy, bindings := false, false
	sort.Strings(res.Files)
	for _, f := range res.Files {
		b, _ := os.ReadFile(f)
		destroy = destroy || strings.Contains(string(b), "destroy: true")
		bindings = bindings || strings.Contains(string(b), "bindings: true")
		_, _ = io.WriteString(h, strings.TrimPrefix(f, req.Dir)+"\x00"+string(b)+"\x00")
	}
	id := hex.EncodeToString(h.Sum(nil))
	if destroy && req.Approve != "approve:"+id {
		return ApplyResult{Revision: id, Result: ResultHeld, Destructive: []string{"release node n1"}, Approve: "approve:" + id, Bindings: bindings}, nil
	}
	r, err := a.st.PutRevision(ctx, statestore.Revision{ID: id, Roots: req.Roots, GitCommit: req.Commit, Design: []byte("{}")})
	if err != nil {
		return ApplyResult{}, err
	}
	return ApplyResult{Revision: id, Result: r.String()}, nil
}

// current is the store's current revision's commit ("" none).
func (a *storeApplier) current(t *testing.T) string {
	t.Helper()
	r, err := a.st.Current(t.Context())
	if err != nil {
		return ""
	}
	return r.GitCommit
}

func newApplier(t *testing.T) *storeApplier {
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	return &storeApplier{st: st}
}
