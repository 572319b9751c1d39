//go:build !linux

package plugin

import "os/exec"

// askParentDeathSignal: only Linux has a parent-death signal; elsewhere
// the plugin polls its parent PID (bindToHost).
func askParentDeathSignal() {}

// bindChild: nothing to set outside Linux.
func bindChild(*exec.Cmd) {}

// spawner runs starts on the caller's thread outside Linux.
type spawner struct{}

func (spawner) do(f func()) { f() }

func (spawner) stop() {}
