package drivers

// ReaderUnwrapper is implemented by a network driver that wraps another
// (metrics, a serve rebinding that follows design changes, a plugin's
// client): Reader answers the read-back side of the driver behind it, ok
// false when that driver is not a NetworkReader. Such a wrapper does not
// implement NetworkReader itself, so that whether it reads ports can
// change with the driver it wraps.
type ReaderUnwrapper interface {
	Reader() (r NetworkReader, ok bool)
}

// ReaderOf is n's read-back side: what n's Reader answers when n wraps
// another driver, else n itself when it is a NetworkReader. Callers use
// it rather than a type assertion, so that wrapped drivers read too.
func ReaderOf(n Network) (NetworkReader, bool) {
	if n == nil {
		return nil, false
	}
	if u, ok := n.(ReaderUnwrapper); ok {
		return u.Reader()
	}
	r, ok := n.(NetworkReader)
	return r, ok
}
