package main

import (
	"strings"
	"testing"
)

// The lifecycle commands refuse bad options before they open any state.
func TestLifecycleCommandUsage(t *testing.T) {
	state := t.TempDir() + "/none.db"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"decommission", "--erase", "wipe", "--state", state}, "use none, quick or secure"},
		{[]string{"rescue", "sideways", "--state", state}, "use enter or exit"},
		{[]string{"destroy", "--delete", "--state", state}, "unknown flag: --delete"},
		{[]string{"test", "extra", "--state", state}, "unknown command"},
		{[]string{"apply-baseline", "--erase", "quick", "--state", state}, "unknown flag: --erase"},
		{[]string{"destroy", "--reboot", "--state", state}, "unknown flag: --reboot"},
		{[]string{"apply-baseline", "extra", "--state", state}, "unknown command"},
	} {
		code, out, errs := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, output %q %q; want %d saying %q", tc.args, code, out, errs, exitUsage, tc.want)
		}
	}
}
