package orchestrator

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestRecordsCarryVersion: the engine writes its records with their
// schema version first, and refuses a record or event a newer release
// wrote (version 3), naming it and the version, rather than misread it.
func TestRecordsCarryVersion(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	r := records{s: s}
	var b batch
	b.node(record.NodeRecord{Name: "n1", MachineID: "m-1", Stage: record.StagePending})
	b.task(record.Task{ID: "T1", Action: "deploy_nodes"})
	b.event(record.Event{Node: "n1", Kind: "transition", Message: "m"})
	if err := r.write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{collNodes, "n1"}, {collTasks, "T1"}} {
		raw, err := s.Get(ctx, c[0], c[1])
		if err != nil || !bytes.HasPrefix(raw, []byte(`{"v":2,`)) {
			t.Errorf("%s %s is stored as %s (%v); want its version first", c[0], c[1], raw, err)
		}
	}
	if n, ok, err := r.node(ctx, "n1"); err != nil || !ok || n.MachineID != "m-1" {
		t.Errorf("node n1 read back as %+v %v %v", n, ok, err)
	}

	newer := []byte(`{"v":3,"name":"n2","machine_id":"m-2","stage":"pending"}`)
	if _, err := s.Write(ctx, statestore.Put(collNodes, "n2", newer),
		statestore.Append(logEvents, []byte(`{"v":3,"node":"n2","kind":"transition","level":"info","message":"m"}`))); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.node(ctx, "n2")
	if err == nil || !strings.Contains(err.Error(), `"n2"`) || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("node n2 of version 3: %v; want a refusal naming the node and version 3", err)
	}
	if _, err := r.nodes(ctx); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("list with a version 3 node record: %v", err)
	}
	_, err = r.events(ctx, 0, 0, "", "")
	if err == nil || !strings.Contains(err.Error(), `event "2"`) || !strings.Contains(err.Error(), "version 3") || errors.Is(err, ErrNotFound) {
		t.Errorf("events with a version 3 event: %v; want a refusal naming event 2 and version 3", err)
	}
}
