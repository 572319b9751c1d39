package drivers

import (
	"context"
	"sync"
)

// A session scope lets an OOB driver keep one BMC session open for the
// calls a caller makes together (power state, boot device, power on), in
// place of a session per call: a session's handshake is most of a short
// call's packets, and a real BMC's slowest part. The caller opens the
// scope with WithSessionScope and passes its context to every call of the
// group; a driver that can keep its session offers it with KeepSession
// after a call succeeded and takes it back with TakeSession at the next
// call; the scope's end closes whatever is still kept. A driver ignores
// scopes it does not use, and a context without one keeps nothing.

type sessionScopeKey struct{}

type sessionScope struct {
	mu    sync.Mutex
	ended bool
	kept  map[any]keptSession
}

type keptSession struct {
	v     any
	close func()
}

// WithSessionScope opens a session scope on ctx; end closes the sessions
// it still keeps. Call end once every call of the group has returned.
func WithSessionScope(ctx context.Context) (scoped context.Context, end func()) {
	s := &sessionScope{kept: map[any]keptSession{}}
	return context.WithValue(ctx, sessionScopeKey{}, s), s.end
}

func (s *sessionScope) end() {
	s.mu.Lock()
	kept := s.kept
	s.kept, s.ended = nil, true
	s.mu.Unlock()
	for _, k := range kept {
		k.close()
	}
}

// KeepSession keeps v, an open session, under key (comparable: what the
// session may be reused for, credentials included) until TakeSession
// takes it or the scope ends, when close runs. False when ctx has no
// open scope: the driver closes the session itself. A session already
// kept under key is closed.
func KeepSession(ctx context.Context, key, v any, close func()) bool {
	s, _ := ctx.Value(sessionScopeKey{}).(*sessionScope)
	if s == nil {
		return false
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	old, had := s.kept[key]
	s.kept[key] = keptSession{v: v, close: close}
	s.mu.Unlock()
	if had {
		old.close()
	}
	return true
}

// TakeSession takes the session kept under key in ctx's scope, for one
// call's use (KeepSession gives it back); nil when none is kept.
func TakeSession(ctx context.Context, key any) any {
	s, _ := ctx.Value(sessionScopeKey{}).(*sessionScope)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kept[key]
	if !ok {
		return nil
	}
	delete(s.kept, key)
	return k.v
}
