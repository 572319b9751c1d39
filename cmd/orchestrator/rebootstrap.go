package main

import (
	"fmt"
	"os"
	"path/filepath"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/spf13/cobra"
)

// rebootstrapCmd: `rebootstrap NODE [--out DIR]`, in-process or through
// the API (admins only there: the answer holds the node's token).
func (a *app) rebootstrapCmd() *cobra.Command {
	var ef engineFlags
	var dir string
	cmd := &cobra.Command{
		Use:   "rebootstrap NODE",
		Short: "Reissue a deployed node's introspection token and wait for its boot action reports again",
		Long: `Rebootstrap gives a node whose machine runs its current deployment a new
introspection token without redeploying it: the previous token stops
working, the deployment's boot action reports are dropped, and the node
waits at the bootstrap stage again (in its deploy task) with a fresh
bootstrap deadline.

MAAS hands a machine its user data only when deploying it, so the new token
reaches the node through you: rebootstrap writes NODE.bootstrap.env and
NODE.user-data (mode 0600, they hold the token) to --out. On the node, as
root, install the first as /etc/slipway/bootstrap.env (mode 0600) and run
/usr/local/sbin/slipway-bootstrap. The token is never printed.

With --server it needs an admin token.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.call(cmd.Context(), &ef.stateFlags, runEngine, ef.output, func(s *session, output string) error {
				out, err := s.c.Rebootstrap(cmd.Context(), argv[0])
				if err != nil {
					return apiErr(err)
				}
				hint := ""
				if s.inProcess {
					hint = "`orchestrator serve` (or `orchestrator wait " + out.Task + "`) runs the task while the node reports"
				}
				return a.writeRebootstrap(argv[0], out, dir, output, hint)
			})
		},
	}
	ef.add(cmd, false)
	cmd.Flags().StringVar(&dir, "out", ".", "directory for NODE.bootstrap.env and NODE.user-data (written 0600: they hold the node's token)")
	return cmd
}

// rebootstrapOutput is what rebootstrap prints: where the credentials
// went, never the credentials.
type rebootstrapOutput struct {
	Node         string `json:"node"`
	Deployment   int    `json:"deployment"`
	Task         string `json:"task"`
	EnvFile      string `json:"env_file"`
	UserDataFile string `json:"user_data_file"`
}

// writeRebootstrap writes the node's new credentials to dir and says
// what to do with them; hint tells who runs the waiting task.
func (a *app) writeRebootstrap(node string, out apitypes.Rebootstrapped, dir, output, hint string) error {
	name := filepath.Base(node)
	res := rebootstrapOutput{Node: node, Deployment: out.Node.Deployment, Task: out.Task,
		EnvFile: filepath.Join(dir, name+".bootstrap.env"), UserDataFile: filepath.Join(dir, name+".user-data")}
	for _, f := range []struct{ path, data string }{{res.EnvFile, out.Env}, {res.UserDataFile, out.UserData}} {
		if err := writePrivate(f.path, f.data); err != nil {
			return usageErr(fmt.Errorf("node %s has a new token, but %w: run rebootstrap again (with --out) for another", node, err))
		}
	}
	if output != "text" {
		return writeDoc(a.stdout, output, res)
	}
	fmt.Fprintf(a.stdout, "node %s: deployment %d has a new introspection token (the previous one is revoked); task %s waits for its boot action reports\n",
		node, res.Deployment, res.Task)
	fmt.Fprintf(a.stdout, "wrote %s and %s (mode 0600: they hold the node's token)\n", res.EnvFile, res.UserDataFile)
	fmt.Fprintf(a.stdout, "on the node, as root: install -m 0600 %s /etc/slipway/bootstrap.env && /usr/local/sbin/slipway-bootstrap\n", filepath.Base(res.EnvFile))
	if hint != "" {
		fmt.Fprintln(a.stdout, hint)
	}
	return nil
}

// writePrivate writes a file only its owner may read, replacing any
// earlier one (the data is never readable by others, even briefly).
func writePrivate(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
