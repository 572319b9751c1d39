// Package record declares the engine's durable records and the words
// they use: tasks and their requests, node records and their lifecycle,
// events, drift, as-built checks, recovery plans. The engine
// (package orchestrator) writes them; the API's wire types and its client
// read them. It depends on the design model and the driver SDK only, so
// a client of the API links neither the engine nor its drivers.
package record
