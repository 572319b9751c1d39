//go:build race

package introspection

// raceOn: the tests run under the race detector, whose sync.Pool drops
// a quarter of what is put back (so that code relying on a pool's hits
// fails its tests): an allocation count there includes refills.
const raceOn = true
