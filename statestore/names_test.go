package statestore

import "testing"

func TestEnumNames(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{OpPut.String(), "put"}, {OpDelete.String(), "delete"}, {OpAppend.String(), "append"},
		{OpKind(0).String(), "OpKind(0)"}, {OpKind(4).String(), "OpKind(4)"},
		{Unchanged.String(), "unchanged"}, {Created.String(), "created"}, {Restored.String(), "restored"},
		{PutResult(-1).String(), "PutResult(-1)"}, {PutResult(3).String(), "PutResult(3)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
