package drivers

// Secret holds a credential. It prints and marshals as "[redacted]", so a
// log line, an error or an API response can't reveal it by accident; the
// value is read only with Reveal, where it is sent to its peer.
type Secret struct{ value string }

// NewSecret wraps a credential.
func NewSecret(v string) Secret { return Secret{value: v} }

// Reveal returns the credential.
func (s Secret) Reveal() string { return s.value }

// IsZero reports whether no credential is held.
func (s Secret) IsZero() bool { return s.value == "" }

const redacted = "[redacted]"

func (s Secret) String() string   { return redacted }
func (s Secret) GoString() string { return redacted }

// MarshalJSON never writes the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// UnmarshalJSON accepts what MarshalJSON wrote and holds no credential:
// secrets never travel inside JSON.
func (s *Secret) UnmarshalJSON([]byte) error {
	*s = Secret{}
	return nil
}
