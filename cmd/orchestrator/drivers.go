package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/drivers/registry"
	"github.com/slipway-dev/slipway/server"
)

func pluginDirFlag(cmd *cobra.Command, p *string) {
	def := os.Getenv("SLIPWAY_PLUGIN_DIR")
	if def == "" {
		def = server.DefaultPluginDir
	}
	cmd.Flags().StringVar(p, "plugin-dir", def, "directory of external drivers, slipway-driver-<kind>-<name> (env SLIPWAY_PLUGIN_DIR)")
}

// registry finds the drivers: the built-ins and the plugins in dir, pinned
// by SHA-256 where pins say (file name -> hex).
func (a *app) registry(dir string, pins map[string]string) (*registry.Registry, error) {
	r, err := server.Registry(dir, pins, a.log)
	if err != nil {
		return nil, usageErr(err)
	}
	return r, nil
}

func (a *app) driversCmd() *cobra.Command {
	var output, dir, cfgFile string
	cmd := &cobra.Command{
		Use:   "drivers [-o text|json] [--plugin-dir DIR] [--config FILE]",
		Short: "List the registered drivers: built-in and external",
		Long: `Drivers lists every driver by kind and name with its source (builtin, or
the plugin's path) and protocol version. Each external driver is started
briefly to check that it runs and to read the protocol version it speaks.
With --config, the configuration's pluginDir and pluginSHA256 pins apply
(a plugin with another SHA-256 than its pin is listed, never started).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return usageErr(fmt.Errorf("-o %q: use text or json", output))
			}
			c, err := server.LoadConfig(cfgFile)
			if err != nil {
				return usageErr(err)
			}
			r, err := a.registry(cmp.Or(c.PluginDir, dir), c.PluginSHA256)
			if err != nil {
				return err
			}
			defer r.Close()
			list := r.List(cmd.Context(), true)
			if output == "json" {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tNAME\tSOURCE\tPROTOCOL\tSTATUS")
			for _, i := range list {
				status := "ok"
				if i.Error != "" {
					status = i.Error
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", i.Kind, i.Name, i.Source, i.Protocol, status)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	pluginDirFlag(cmd, &dir)
	cmd.Flags().StringVar(&cfgFile, "config", "", "engine configuration file (YAML): its pluginDir and pluginSHA256 pins")
	return cmd
}
