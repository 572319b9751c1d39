package maas

import (
	"context"
	"net/http"
	"net/url"
)

// tagNodes adds the machine to the tag, or removes it (op "add" or
// "remove"), in one update_nodes request with every other machine being
// added to (removed from) the same tag at the time (internal/batch).
// MAAS ignores IDs it does not know, so one machine cannot fail another's
// request; a failed request fails every caller in it (each retries).
func (d *Driver) tagNodes(ctx context.Context, tag, op, id string) error {
	_, err := d.tagBatches.Do(ctx, tag+"\x00"+op, id, func(ctx context.Context, ids []string) ([]struct{}, error) {
		return nil, d.c.call(ctx, http.MethodPost, "tags/"+url.PathEscape(tag)+"/", "update_nodes", url.Values{op: ids}, nil)
	})
	return err
}
