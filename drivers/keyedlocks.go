package drivers

import (
	"context"
	"sync"
)

// KeyedLocks gives one lock per key (such as a BMC's address), created
// on demand and dropped when nobody holds or waits for it. A waiter gives
// up when its context ends. The zero value is ready to use; it is safe
// for concurrent use. Drivers and the engine use it to make one call at a
// time to a BMC.
type KeyedLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	ch    chan struct{}
	users int // holding or waiting
}

// Lock waits for key's lock, or for ctx to end; it returns the unlock.
func (k *KeyedLocks) Lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	drop := func() {
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}
