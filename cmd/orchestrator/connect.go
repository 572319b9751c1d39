package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/server"
)

// Every command that reads or changes the state is a client of the
// control API (api/client). connect picks the server:
//   - --server (or SLIPWAY_SERVER): that server, with the bearer token;
//   - else a local `serve` listening on the socket beside the state
//     database (server.LocalSocket): it holds the database, so the command
//     talks to it, as the OS user the socket's peer credentials name;
//   - else the engine and the API run in this process, on a private
//     socket in a temporary directory, for as long as the command runs.

// engineMode says what an in-process engine must do for a command.
type engineMode int

const (
	// readState: the engine is built over the state but not started (no
	// drivers, no task resumed): for commands that read records or store
	// designs, tokens and secrets.
	readState engineMode = iota
	// runEngine: the engine starts with the current design's drivers and
	// resumes unfinished tasks: for tasks, verbs and reconciliation.
	runEngine
	// writeSecrets: readState, and the secret key is created when there
	// is none yet (secret set).
	writeSecrets
)

// session is a command's API client and how to let go of it.
type session struct {
	c     *client.Client
	close func()
	// inProcess: the engine runs in this process and stops with it.
	inProcess bool
}

// connect returns the client the command uses (see above). The caller
// closes the session.
func (a *app) connect(ctx context.Context, f *stateFlags, mode engineMode) (*session, error) {
	if c, err := a.remote(); err != nil {
		return nil, usageErr(err)
	} else if c != nil {
		return &session{c: c, close: func() {}}, nil
	}
	cfg, err := f.config()
	if err != nil {
		return nil, err
	}
	if s, err := a.dialServe(cfg.State); err != nil || s != nil {
		return s, err
	}
	return a.inProcess(ctx, cfg, mode)
}

// dialServe is a session with the serve that answers on the socket
// beside state; nil when none does. A socket this user must not trust
// (server.CheckSocket) is an error: nothing is sent to it.
func (a *app) dialServe(state string) (*session, error) {
	path := server.LocalSocket(state)
	if ok, err := server.CheckSocket(path); err != nil {
		return nil, usageErr(err)
	} else if !ok || !server.ServeAnswers(state) {
		return nil, nil // none, or a socket left by a serve that died: run in process
	}
	c, err := client.New("http://local", "", client.WithUnixSocket(path))
	if err != nil {
		return nil, nil
	}
	a.log.Info().Str("socket", path).Msg("a local serve holds the state database: talking to it")
	return &session{c: c, close: func() {}}, nil
}

// inProcess runs the engine and the API in this process for one command
// (server.ServeInProcess).
func (a *app) inProcess(ctx context.Context, cfg server.Config, mode engineMode) (*session, error) {
	if a.limits.FileBytes > 0 { // apply's --max-file-bytes, --max-design-bytes
		cfg.DesignMaxFileBytes, cfg.DesignMaxBytes = server.ByteSize(a.limits.FileBytes), server.ByteSize(a.limits.DesignBytes)
	}
	p, err := server.ServeInProcess(ctx, cfg, a.serverOptions(), mode == runEngine, mode == writeSecrets)
	if err != nil {
		return nil, usageErr(err)
	}
	c, err := client.New("http://local", "", client.WithUnixSocket(p.Socket))
	if err != nil {
		p.Close()
		return nil, err
	}
	return &session{c: c, inProcess: true, close: p.Close}, nil
}

// stateFlags are --config, --state and --plugin-dir: the engine a command
// runs in process when no server is given.
type stateFlags struct {
	cfgFile, state, pluginDir string
	keyFile                   string // secret set's --key-file: overrides the configuration's
}

func (f *stateFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.cfgFile, "config", "", "engine configuration file (YAML; see docs/operations.md)")
	stateFlag(cmd, &f.state)
	pluginDirFlag(cmd, &f.pluginDir)
}

// config is the engine configuration (server.LoadConfig): the file's,
// the flags filling what it leaves out (--key-file wins).
func (f *stateFlags) config() (server.Config, error) {
	c, err := server.LoadConfig(f.cfgFile, server.Flag{Key: "state", Value: f.state}, server.Flag{Key: "pluginDir", Value: f.pluginDir},
		server.Flag{Key: "keyFile", Value: f.keyFile, Given: f.keyFile != ""})
	if err != nil {
		return c, usageErr(err)
	}
	return c, nil
}

// ---- output: one formatter for every command that prints records ----

// outputFlag adds -o.
func outputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "text", "output format: text (a table), json or yaml")
}

// checkOutput accepts -o text (or table), json and yaml, and says "text"
// for the first two.
func checkOutput(o string) (string, error) {
	switch o {
	case "", "text", "table":
		return "text", nil
	case "json", "yaml":
		return o, nil
	}
	return "", usageErr(fmt.Errorf("-o %q: use text (or table), json or yaml", o))
}

// emit prints v as a JSON or YAML document, or runs text for -o text.
func (a *app) emit(output string, v any, text func() error) error {
	if output == "json" || output == "yaml" {
		return writeDoc(a.stdout, output, v)
	}
	return text()
}

// printTable prints rows as aligned columns under header (tab-separated
// column names); with no rows, empty when it is set.
func (a *app) printTable(empty, header string, rows [][]string) error {
	if len(rows) == 0 && empty != "" {
		_, err := fmt.Fprintln(a.stdout, empty)
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// allPages reads every page of an API list: fetch asks for the page at
// an offset.
func allPages[T any](fetch func(offset int) (apitypes.Page[T], error)) ([]T, error) {
	out := []T{}
	for offset := 0; ; {
		p, err := fetch(offset)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Items...)
		offset += len(p.Items)
		if len(p.Items) == 0 || offset >= p.Total {
			return out, nil
		}
	}
}

// apiErr is a failed API call: exit 2 with the server's answer (status,
// detail, request ID).
func apiErr(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return usageErr(err)
}

// orDefault is s, else def when s is empty.
func orDefault(s, def string) string { return cmp.Or(s, def) }

// printable drops control characters from text the server sends before it
// goes to a terminal.
func printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

// call checks -o, connects (see connect) and runs fn with the session,
// which it closes after.
func (a *app) call(ctx context.Context, f *stateFlags, mode engineMode, output string, fn func(s *session, output string) error) error {
	output, err := checkOutput(output)
	if err != nil {
		return err
	}
	s, err := a.connect(ctx, f, mode)
	if err != nil {
		return err
	}
	defer s.close()
	return fn(s, output)
}

// show prints what an API call answered (emit), or fails with its error.
func (a *app) show(output string, v any, err error, text func() error) error {
	if err != nil {
		return apiErr(err)
	}
	return a.emit(output, v, text)
}
