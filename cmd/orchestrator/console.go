package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// consoleCmd: `console NODE [--write] [--for D]`, a client of the API's
// console routes like every state command.
func (a *app) consoleCmd() *cobra.Command {
	var sf stateFlags
	var write bool
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "console NODE",
		Short: "Attach to a node's serial console (IPMI Serial over LAN) through the engine",
		Long: `Console shows a node's serial console as the machine writes it: firmware
POST, the boot loader, the installer and the OS (its kernel messages and
login prompt when it sends them to ttyS0). The engine attaches through the
node's first OOB method that has a console: ipmi (Serial over LAN, lanplus);
a Redfish-managed node uses its ipmi oob.fallback. It needs an admin token,
and the attach and detach are audited and are events of the node.

Read-only unless --write: then what you type on standard input is sent to
the console a line at a time (a newline is sent as CR, as a terminal's
Enter key); the audit log counts the characters, never holds them.

The console stays attached until Ctrl-C, --for elapses, the server's
stream lifetime ends it, or the BMC does. One console per node: a second
attach is refused (409) naming who holds it; so is one while another tool
(ipmitool sol activate) holds the BMC's.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if dur < 0 {
				return usageErr(fmt.Errorf("--for %v: give a positive duration, or 0 for no limit", dur))
			}
			return a.call(cmd.Context(), &sf, runEngine, "text", func(s *session, _ string) error {
				return a.console(cmd.Context(), s, argv[0], write, dur)
			})
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&write, "write", false, "type standard input at the console (default: read-only)")
	cmd.Flags().DurationVar(&dur, "for", 0, "detach after this long (default: until Ctrl-C)")
	return cmd
}

// console streams the node's console to stdout, typing stdin at it with
// write, until ctx is done, dur elapses or the stream ends.
func (a *app) console(ctx context.Context, s *session, node string, write bool, dur time.Duration) error {
	if dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dur)
		defer cancel()
	}
	rc, err := s.c.Console(ctx, node, write)
	if err != nil {
		return apiErr(err)
	}
	defer rc.Close()
	mode := "read-only"
	if write {
		mode = "read-write"
		go a.typeLines(ctx, s, node)
	}
	fmt.Fprintf(a.stderr, "[attached to the console of %s, %s; Ctrl-C detaches]\n", node, mode)
	_, err = io.Copy(a.stdout, rc)
	fmt.Fprintf(a.stderr, "\n[detached from the console of %s]\n", node)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("console of %s: %w", node, err)
	}
	return nil
}

// typeLines sends standard input to the console a line at a time, each
// newline as CR; it stops at the end of the input or of ctx.
func (a *app) typeLines(ctx context.Context, s *session, node string) {
	if a.stdin == nil {
		return
	}
	buf := make([]byte, 1024)
	for ctx.Err() == nil {
		n, err := a.stdin.Read(buf)
		if n > 0 {
			text := bytes.ReplaceAll(bytes.ReplaceAll(buf[:n], []byte("\r\n"), []byte("\r")), []byte("\n"), []byte("\r"))
			if ierr := s.c.ConsoleInput(ctx, node, string(text)); ierr != nil && ctx.Err() == nil {
				fmt.Fprintf(a.stderr, "[typing at the console of %s: %v]\n", node, apiErr(ierr))
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(a.stderr, "[reading standard input: %v]\n", err)
			}
			return
		}
	}
}
