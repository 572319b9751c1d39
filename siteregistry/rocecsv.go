package siteregistry

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// MaxRoCECSVBytes bounds a RoCE CSV file.
const MaxRoCECSVBytes = 1 << 20

// roceColumns are the CSV's columns, named by its header in any order.
var roceColumns = []string{"hostname", "interface", "ipv4_cidr"}

// ParseRoCECSV reads RoCE assignments from CSV: a header naming the
// columns hostname, interface and ipv4_cidr (in any order, nothing else),
// then one assignment per row, at most MaxRoCEItems rows and
// MaxRoCECSVBytes bytes. Errors name the line. Values are checked by the
// bulk upsert, not here.
func ParseRoCECSV(r io.Reader) ([]RoCEItem, error) {
	lr := &io.LimitedReader{R: r, N: MaxRoCECSVBytes + 1}
	cr := csv.NewReader(lr)
	cr.FieldsPerRecord = len(roceColumns)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, csvError(lr, fmt.Errorf("the header: %w", err))
	}
	idx, err := columns(head)
	if err != nil {
		return nil, err
	}
	var out []RoCEItem
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(lr, err)
		}
		if len(out) == MaxRoCEItems {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("line %d: more than %d assignments; split the file", line, MaxRoCEItems)
		}
		out = append(out, RoCEItem{Hostname: strings.TrimSpace(rec[idx[0]]), Interface: strings.TrimSpace(rec[idx[1]]),
			IPv4CIDR: strings.TrimSpace(rec[idx[2]])})
	}
	if len(out) == 0 {
		return nil, errors.New("no assignments after the header")
	}
	return out, nil
}

// columns maps the header to roceColumns' order.
func columns(head []string) ([3]int, error) {
	var idx [3]int
	seen := map[string]bool{}
	for i, h := range head {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		j := slices.Index(roceColumns, name)
		if j < 0 || seen[name] {
			return idx, fmt.Errorf("line 1: header column %q: the header names each of %s once", h, strings.Join(roceColumns, ", "))
		}
		seen[name] = true
		idx[j] = i
	}
	return idx, nil
}

// csvError says what is wrong, and that the file is too big when the
// limit cut it.
func csvError(lr *io.LimitedReader, err error) error {
	if lr.N <= 0 {
		return fmt.Errorf("the file is over %d bytes; split it", MaxRoCECSVBytes)
	}
	return err
}
