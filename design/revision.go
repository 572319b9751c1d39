package design

import "github.com/slipway-dev/slipway/internal/jsonkeys"

// DecodeRevision decodes a stored revision's canonical JSON into a Design.
// A revision stored by a release before the API's snake_case names reads
// under today's names (internal/jsonkeys), so every reader of stored
// revisions goes through here rather than through encoding/json.
func DecodeRevision(canonical []byte) (*Design, error) {
	d := &Design{}
	if err := jsonkeys.Unmarshal(canonical, d); err != nil {
		return nil, err
	}
	d.nameSites()
	return d, nil
}
