package maas

import (
	segjson "github.com/segmentio/encoding/json"
)

// A machine that has just finished commissioning is read twice in a row:
// the status poll's listing finds it Ready (and wakes its node), then the
// inventory step reads the whole machine for its hardware. The listing
// carries every machine whole (MAAS has no field selection), so the
// status read keeps the JSON of each Ready machine it lists in the read
// cache, with its state, and the inventory that comes within machineTTL,
// nothing of the machine written since, decodes that instead of asking
// MAAS again. The JSON is copied, not decoded, until an inventory takes
// it: a machine whose inventory comes later (nodes queue for the
// configure stage in a large rollout) costs the copy alone.

// statusRead is an element of the status poll's listing: the machine's
// state, and the element itself when the machine is Ready.
type statusRead struct {
	mMachineState
	ready []byte // the element's JSON (Ready machines only)
}

// UnmarshalJSON decodes the state and keeps a Ready machine's JSON.
func (s *statusRead) UnmarshalJSON(b []byte) error {
	if err := segjson.Unmarshal(b, &s.mMachineState); err != nil {
		return err
	}
	if s.Status == stReady {
		s.ready = append([]byte(nil), b...)
	}
	return nil
}

// keepReady keeps the JSON of the Ready machines of a status read begun
// at since (their states are in the cache already: putRead).
func (c *readCache) keepReady(since uint64, st []statusRead) {
	for i := range st {
		if st[i].ready != nil {
			c.keepJSON(since, st[i].SystemID, st[i].ready)
			st[i].ready = nil
		}
	}
}
