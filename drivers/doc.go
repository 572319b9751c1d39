// Package drivers is the driver SDK: what Slipway asks of the drivers that
// touch the world, and all an external driver needs to import. It holds
// the interfaces of the three kinds (OOB for a server's BMC, Server for a
// provisioner such as MAAS, Network for the switch ports), the plain data
// they take and give (Node, BMC, SiteSpec, Machine, Inventory, ...), the
// Result of a step and the error classes, Secret (a value that never
// prints), Redact, and WithWaiting/Waiting, by which a driver that waits
// on another call's request lends the engine's slot meanwhile.
//
// A step is idempotent, look then act: the driver reads the real state,
// changes only what differs and answers a Result (done; in progress, look
// again after RetryAfter; failed, with the reason) or an error that
// Classify sorts into Transient (retried; the class of an error that has
// none), Permanent or NeedsIntervention.
//
// The package imports nothing else of Slipway (a test holds it so). The
// engine maps its design onto these types in orchestrator/driverspec, finds a
// driver by kind and name in drivers/registry, and runs an external one in
// a subprocess over gRPC with drivers/plugin; plain data is what lets one
// interface serve in-process and out.
package drivers
