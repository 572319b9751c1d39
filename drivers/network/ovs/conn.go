package ovs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
)

// Bounds of a call to a switch.
const (
	connectTimeout  = 5 * time.Second
	transactTimeout = 15 * time.Second
	// applyTimeout bounds the wait for ovs-vswitchd to apply a change.
	applyTimeout = 15 * time.Second
)

// conn is the OVSDB connection to one address, opened lazily and again
// after it was lost. mu serializes the configuration of the switches
// behind it (read, decide, write), so that two calls never regroup the
// same ports at once.
type conn struct {
	addr string
	sem  chan struct{} // held by a whole read-decide-write
	cmu  chan struct{} // guards cl (a channel: a caller waiting for another's connect gives up with its context)
	cl   client.Client
}

// client is c's connected client: the one it has, or a new one when it
// has none or lost it.
func (c *conn) client(ctx context.Context, dbm model.ClientDBModel) (client.Client, error) {
	select {
	case c.cmu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.cmu }()
	if c.cl != nil && c.cl.Connected() {
		return c.cl, nil
	}
	if c.cl != nil {
		c.cl.Close()
		c.cl = nil
	}
	discard := logr.Discard()
	cl, err := client.NewOVSDBClient(dbm, client.WithEndpoint(c.addr), client.WithLogger(&discard))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := cl.Connect(cctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	c.cl = cl
	return cl, nil
}

// lock takes c's configuration lock, or gives up when ctx ends.
func (c *conn) lock(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conn) unlock() { <-c.sem }

// drop closes c's client (after an error that may have left it broken).
func (c *conn) drop() {
	c.cmu <- struct{}{}
	defer func() { <-c.cmu }()
	if c.cl != nil {
		c.cl.Close()
		c.cl = nil
	}
}

// transact runs ops in one transaction, bounded, and checks every
// operation's result.
func transact(ctx context.Context, cl client.Client, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	ctx, cancel := context.WithTimeout(ctx, transactTimeout)
	defer cancel()
	res, err := cl.Transact(ctx, ops...)
	if err != nil {
		return nil, err
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return res, &txError{fmt.Errorf("%v: %s", err, opErrors(res, ops))}
	}
	return res, nil
}

// opErrors says which operations failed and why, in the server's words.
func opErrors(res []ovsdb.OperationResult, ops []ovsdb.Operation) string {
	var out []string
	for i, r := range res {
		if r.Error == "" {
			continue
		}
		what := "commit"
		if i < len(ops) {
			what = ops[i].Op + " " + ops[i].Table
		}
		out = append(out, fmt.Sprintf("%s: %s (%s)", what, r.Error, r.Details))
		if len(out) == 3 {
			break
		}
	}
	return strings.Join(out, "; ")
}

// txError is a transaction the server refused (as opposed to one that
// did not reach it).
type txError struct{ err error }

func (e *txError) Error() string { return e.err.Error() }
func (e *txError) Unwrap() error { return e.err }

func isTxError(err error) bool {
	var t *txError
	return errors.As(err, &t)
}

// selectAll is the operation reading every row of table.
func selectAll(table string) ovsdb.Operation {
	return ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table, Where: []ovsdb.Condition{}}
}

// decode fills the models out (a pointer to a slice of pointers) from
// the rows of a select.
func decode[T any](cl client.Client, rows []ovsdb.Row) ([]*T, error) {
	out := make([]*T, 0, len(rows))
	dbm := cl.Cache().DatabaseModel()
	for i := range rows {
		m := new(T)
		info, err := dbm.NewModelInfo(m)
		if err != nil {
			return nil, err
		}
		if err := cl.Cache().Mapper().GetRowData(&rows[i], info); err != nil {
			return nil, fmt.Errorf("decoding a row: %w", err)
		}
		u, ok := rows[i]["_uuid"].(ovsdb.UUID)
		if !ok {
			return nil, fmt.Errorf("a row without _uuid")
		}
		if err := info.SetField("_uuid", u.GoUUID); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
