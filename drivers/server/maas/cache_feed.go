package maas

import "time"

// The read cache follows the change feed. MAAS records "Node changed
// status" on every save that changes a machine's status (changes.go), so
// a machine that Changes does not name between a read of it and now has
// the status it had when read. Its state (status, status message, owner,
// owner data) is then answered from that read past machineTTL, to a
// caller that needs nothing else (need 0: the looks Commission, Deploy
// and Release start with). Never its interfaces, storage or tags: MAAS
// changes those without a status change (an operator's edit), and this
// driver's own writes of them, of the owner data or of anything else of
// the machine drop what they change as before. The owner and owner data
// are kept with the status: MAAS changes the owner only by allocating or
// releasing, which change the status too; and every action that acts on
// the state MAAS refuses (409) when the state moved, after which the
// driver reads the machine again without the cache.
//
// The ordering, exactly. Event IDs come from a sequence and a query after
// an ID answers the events committed before it ran. A chain is a run of
// Changes calls each from the cursor the one before answered; it starts
// (its base) when an answer comes for a cursor that is not the last one
// answered (the first call, a Reset, another caller's cursor). Events
// committed after the call that set the base have IDs above its cursor,
// so a read that began after the base was taken (since >= baseEpoch) and
// was not named by any answer of the chain since has the status MAAS had
// when the chain's latest call was sent (confirmed). A named machine is
// dropped like a written one: a read in flight when the answer came is
// not kept. Answered past machineTTL are only such reads, while the
// chain's latest call was sent within machineTTL (the poller asks every
// poll; a feed that stopped keeps nothing), and only for feedTTL after the
// state was read: an event whose transaction committed after a later
// event's was read (its ID already behind the cursor) is seen by the
// chain only when it is within changesOverlap of the cursor (changes.go),
// and the engine's full read (orchestrator's defaultFullPoll) is the
// safety net for one further behind; feedTTL (one minute by
// default, SettingCacheFeedTTL) bounds how long a cached state can hide
// such a change to the same. A waiting node's state is refreshed sooner:
// the poll's reads of it replace the cached state.

// defaultFeedTTL is how long after a machine's state was read the change
// feed may keep answering it: the engine's full read period at time
// scale 1.
const defaultFeedTTL = time.Minute

// feedState is the change feed as the read cache follows it.
type feedState struct {
	cursor    string    // the cursor the last answer gave ("": none)
	baseEpoch uint64    // reads begun at this epoch or later are followed (0: no chain yet)
	confirmed time.Time // when the chain's latest call was sent (zero: none since the base)
}

// clock is the cache's clock (time.Now without a cache).
func (c *readCache) clock() time.Time {
	if c == nil {
		return time.Now()
	}
	return c.now()
}

// followed says the machine's cached state is current by the change
// feed. The caller holds c.mu.
func (c *readCache) followed(e cachedMachine, now time.Time) bool {
	f := &c.feed
	return c.inChain(e, now) && !f.confirmed.IsZero() && now.Sub(f.confirmed) <= c.machineTTL
}

// inChain says the machine's state read is one the feed's chain follows
// (begun after its base) and not older than feedTTL. The caller holds
// c.mu.
func (c *readCache) inChain(e cachedMachine, now time.Time) bool {
	return c.feedTTL > 0 && c.feed.baseEpoch > 0 && e.since >= c.feed.baseEpoch && now.Sub(e.seen) <= c.feedTTL
}

// changed takes an answer of the change feed: the machines changed after
// from (ids), the cursor answered (to), when the call was sent, and
// whether it was a Reset (the driver could not tell what changed).
func (c *readCache) changed(from, to string, ids []string, sent time.Time, reset bool) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for _, id := range ids {
		c.drop(id)
	}
	f := &c.feed
	if !reset && from != "" && from == f.cursor {
		if sent.After(f.confirmed) {
			f.confirmed = sent
		}
	} else { // a new chain: reads from now on are followed
		f.baseEpoch, f.confirmed = c.epoch, time.Time{}
	}
	f.cursor = to
}

// expireMachines drops the machines read more than machineTTL ago, but
// keeps the state of those the change feed follows, until feedTTL after
// it was read. The caller holds c.mu.
func (c *readCache) expireMachines(now time.Time) {
	c.aged.expire(now.Add(-c.machineTTL), func(id string, at time.Time) {
		e, ok := c.machines[id]
		if !ok || e.at.After(at) { // not put again since
			return
		}
		if !c.inChain(e, now) {
			delete(c.machines, id)
			return
		}
		e.m, e.raw = e.m.machine(), nil // the state alone: memory
		e.stale |= partInterfaces | partStorage
		c.machines[id] = e
		c.feedAged.push(id, e.seen)
	})
	c.feedAged.expire(now.Add(-c.feedTTL), func(id string, seen time.Time) {
		if e, ok := c.machines[id]; ok && !e.seen.After(seen) && now.Sub(e.at) > c.machineTTL {
			delete(c.machines, id)
		}
	})
}
