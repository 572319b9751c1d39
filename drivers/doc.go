// Package drivers is how Slipway touches the world: the out-of-band (BMC),
// server provisioning (MAAS) and network (switch) driver interfaces, their
// typed step results and error classes, the plain data they exchange, and
// the registry that finds built-in and external (go-plugin) drivers.
//
// Every step is idempotent "look, then act": a driver reads the real state,
// acts only if needed and returns a Result (done; in progress, look again
// after D; failed with a reason) or an error whose class Classify tells.
// Arguments and results are plain data, so the same interface runs
// in-process or in a plugin subprocess over gRPC.
package drivers
