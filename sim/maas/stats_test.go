package maas

import (
	"net/http"
	"testing"
)

// TestRequestCountedBeforeItsAnswerEnds: a request is counted when it
// arrives, so a client holding its answer always finds it counted. Counted
// as the handler returned, the count could lag the answer the client
// already had (TestPlanNodesDeployed read one write short in CI).
func TestRequestCountedBeforeItsAnswerEnds(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.enlist(1, "counted")
	var seen, statuses int
	l.s.beforeStatus = func() {
		seen = l.s.Stats().ByKind()["POST set_owner_data"]
		statuses = l.s.Stats().Snapshot().Statuses[http.StatusOK]
	}
	before := l.s.Stats().Snapshot().Statuses[http.StatusOK]
	l.must(http.StatusOK, http.MethodPost, "/machines/"+id+"/?op=set_owner_data", map[string][]string{"k": {"v"}}, nil)
	l.s.beforeStatus = nil
	if seen != 1 {
		t.Errorf("the set_owner_data request was counted %d times before its handler returned, want 1", seen)
	}
	if statuses != before {
		t.Errorf("its status was counted before its handler returned: %d, want %d", statuses, before)
	}
	if got := l.s.Stats().Snapshot().Statuses[http.StatusOK]; got != before+1 {
		t.Errorf("200 answers %d after the request, want %d", got, before+1)
	}
}

// TestListedByIDCounted: the machines a listing is asked for by ID are
// counted (how many machine objects the engine's status poll reads),
// and a listing without IDs counts none.
func TestListedByIDCounted(t *testing.T) {
	l := newSimLab(t, nil)
	a, b := l.enlist(1, "a"), l.enlist(2, "b")
	l.must(http.StatusOK, http.MethodGet, "/machines/", map[string][]string{"id": {a, b}}, nil)
	l.must(http.StatusOK, http.MethodGet, "/machines/", nil, nil)
	if got := l.s.Stats().Snapshot().ListedByID; got != 2 {
		t.Errorf("listed by ID: %d, want 2", got)
	}
}
