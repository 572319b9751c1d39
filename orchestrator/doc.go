// Package orchestrator is Slipway's engine: it turns a validated design
// revision and a node filter into tasks, and drives every selected node
// through its own workflow (a state table, persisted after every
// transition) using the OOB, server and network drivers.
//
// Nodes advance independently: there is no barrier between stages, so a
// slow node never holds back a fast one. Concurrency is bounded globally,
// per provisioner and to one operation per BMC. Waiting nodes hold no
// slot: their provisioner status is polled in one batched call for all of
// them. Transient driver errors are retried with capped, jittered
// exponential backoff within a per-stage budget; permanent errors fail the
// node with the reason; needs-intervention errors freeze it.
//
// Intent before action: every provisioner mutation (allocate+deploy,
// release) is preceded by a persisted record, and every step is a driver
// "look, then act" call, so a process killed at any instant resumes each
// task on restart without a second allocation or deployment.
//
// Recovery verbs (retry, resume, rerun, restart-clean, cancel, adopt,
// mark-manual-intervention, release-manual) are distinct operations; see
// docs/operations.md.
package orchestrator
