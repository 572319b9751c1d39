package drivers

import "context"

// ServerChanges is implemented by a server driver that can tell which
// machines changed since a point in its provisioner's history (MAAS's
// event log), so that a caller watching many machines reads only those
// (Status) instead of every one each time. A driver without it is polled
// whole. Built-in drivers only: the plugin protocol does not carry it.
type ServerChanges interface {
	// Changes answers the machines whose state changed after cursor (an
	// opaque value from an earlier answer; "" for none) and the cursor to
	// ask from next. Reset says the driver cannot tell (the first call,
	// its history pruned, too much changed to read): the caller reads
	// every machine it watches, then asks from the answer's Cursor.
	Changes(ctx context.Context, cursor string) (Changes, error)
}

// Changes is what changed since a cursor.
type Changes struct {
	Cursor   string   // ask from here next
	Machines []string // machine IDs that changed (each once); none when Reset
	Reset    bool     // read every watched machine
	// States, when the driver can tell, is the state (as Machine.State)
	// each machine changed to last, by machine ID: a caller whose view
	// of a machine is that state need not read it. A machine missing
	// from States (or States nil) must be read.
	States map[string]string
}

// SiteChanger is implemented by a wrapper of server drivers (a site
// multiplexer, serve's rebinding, metrics): SiteChanges answers the
// changes reader of the driver of one Site behind it, ok false when that
// driver has none. As with SiteImager, such a wrapper does not implement
// ServerChanges itself.
type SiteChanger interface {
	SiteChanges(ctx context.Context, site string) (ServerChanges, bool)
}

// ChangesAt is the changes reader of site's driver behind srv: what srv's
// SiteChanges answers when srv wraps drivers, else srv itself when it is
// a ServerChanges. ok is false when the driver cannot tell what changed
// (the caller then reads every machine, as before). Callers use it rather
// than a type assertion, so that wrapped drivers are reached too.
func ChangesAt(ctx context.Context, srv Server, site string) (ch ServerChanges, ok bool) {
	if srv == nil {
		return nil, false
	}
	if w, isW := srv.(SiteChanger); isW {
		return w.SiteChanges(ctx, site)
	}
	ch, ok = srv.(ServerChanges)
	return ch, ok
}
