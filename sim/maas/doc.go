// Package maas is a MAAS region API 2.0 simulator: the same paths, ops,
// form encodings, JSON shapes, status codes and machine state machine as
// MAAS, backed by an in-memory world. It is the heart of Slipway's virtual
// lab, where the demo, the end-to-end tests and the benchmarks run, and it
// is built to be faithful enough that a driver that works against it works
// against a real MAAS.
//
// Every request must carry OAuth 1.0 PLAINTEXT credentials (the API key
// consumer_key:token_key:token_secret); machines move through MAAS's
// integer statuses and only along MAAS's allowed transitions; phases take
// simulated time (scaled by Options.TimeScale); faults (HTTP 500/503/409,
// latency) can be injected per op from a seeded random source. Counts of
// requests per path and op are served at /sim/stats.
package maas
