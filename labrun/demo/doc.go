// Package demo is the demo's deployment over the embedded lab (labrun):
// every node of a design deployed into the virtual lab by the engine,
// with live progress, the control API and dashboard beside it when asked,
// and the outcome counted from the lab's own state (its machines, their
// node agents and the simulated MAAS), never from the engine's results.
// `orchestrator demo` parses its flags and calls Deploy; the benchmarks
// (scripts/bench-deploy*.sh) read Run's JSON.
package demo
