package main

// serve: parse the flags, make the configuration (server.LoadConfig) and
// run the server (server.Run). What serve builds lives in package server.

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/server"
)

// serveFlags are serve's flags (the configuration file's keys win unless
// a flag is given).
type serveFlags struct {
	cfgFile, state, dir, listen, tlsCert, tlsKey, introListen, cpuProfile, pprofAddr, heapProfile string
	// the firmware images of hardware profiles' baselines (server/firmware.go)
	firmwareDir, firmwareListen, firmwareURL string
	// the OS images' content (Image documents' custom sources; server/images.go)
	imageDir, imageCache string
	// a replica group on etcd (server/servegroup.go)
	store, etcdPrefix, etcdCA, etcdCert, etcdKey, replicaID, advertise, dataDir string
	leaseTTL                                                                    int
}

func (a *app) serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--listen ADDR] [--introspection-listen ADDR] [--tls-cert FILE --tls-key FILE] [--cpu-profile FILE]",
		Short: "Run the engine and the control API",
		Long: `Serve runs the deploy engine and the control API (/api/v1) until
interrupted. At start it resumes every task that was queued or running when
the last process stopped (each node from its last checkpoint), runs the
leak and drift sweep (again every sweepInterval), creates the secret
encryption key if there is none, and writes a first admin token to a 0600
file when no admin token exists yet.

Besides --listen, the API answers on the Unix socket STATE.sock beside the
state database (mode 0600), where the local CLI's commands reach it while
serve holds the database: the caller's OS user (the server's own, or root)
is an admin there, without a token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config(cmd)
			if err != nil {
				return err
			}
			stop, err := startProfiling(f.pprofAddr, f.cpuProfile)
			if err != nil {
				return usageErr(err)
			}
			defer stop()
			if f.heapProfile != "" {
				stopHeap, err := startHeapPeakProfile(f.heapProfile)
				if err != nil {
					return usageErr(err)
				}
				defer stopHeap()
			}
			if err := server.Run(cmd.Context(), c, a.serverOptions()); err != nil {
				return usageErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.cfgFile, "config", "", "engine configuration file (YAML; see docs/operations.md)")
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:8700", "address of the control API")
	cmd.Flags().StringVar(&f.introListen, "introspection-listen", ":8701", "address of the introspection API (deploying nodes call it)")
	cmd.Flags().StringVar(&f.firmwareDir, "firmware-dir", "", "directory of the firmware images hardware profiles' baselines name (image file:); served to the BMCs once each SHA-256 is checked")
	cmd.Flags().StringVar(&f.firmwareListen, "firmware-listen", "", "address the BMCs fetch firmware images from (default :8702 with --firmware-dir: every address, so --firmware-url is then needed)")
	cmd.Flags().StringVar(&f.imageDir, "image-dir", "", "directory of the custom OS images Image documents name (source file:); each is verified (SHA-256, size) before any provisioner sees a byte")
	cmd.Flags().StringVar(&f.imageCache, "image-cache", "", "directory keeping the verified downloads of URL OS images, the newest version of each (--image-dir files are verified in place, not copied; default: image-cache beside --state)")
	cmd.Flags().StringVar(&f.firmwareURL, "firmware-url", "", "URL the BMCs reach the firmware listener at (http://10.0.0.5:8702); needed when --firmware-listen is on every address")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM)")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	cmd.Flags().StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the process to FILE until it stops (runtime/pprof)")
	cmd.Flags().StringVar(&f.heapProfile, "heap-profile", "", "sample the memory every 2 s into FILE.series (JSON lines: the runtime's memory classes, the resident set's parts); at each new high of the resident set (5% above the last) write an in-use heap profile to FILE, that sample to FILE.json and the goroutines to FILE.goroutines")
	cmd.Flags().StringVar(&f.pprofAddr, "pprof", "", "serve net/http/pprof (heap, goroutines, CPU, execution trace) on this loopback address, e.g. 127.0.0.1:6060")
	stateFlag(cmd, &f.state)
	pluginDirFlag(cmd, &f.dir)
	f.haFlags(cmd)
	return cmd
}

// haFlags are the flags of a replica group on etcd.
func (f *serveFlags) haFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", "keep the state in etcd instead of --state: etcd://HOST:PORT[,HOST:PORT...]; several serves on one store form a replica group (one leader runs the engine)")
	fl.StringVar(&f.etcdPrefix, "etcd-prefix", "", "the key prefix of the state in etcd (default /slipway/)")
	fl.StringVar(&f.etcdCA, "etcd-ca", "", "CA certificate (PEM) of etcd's client TLS")
	fl.StringVar(&f.etcdCert, "etcd-cert", "", "client certificate (PEM) presented to etcd")
	fl.StringVar(&f.etcdKey, "etcd-key", "", "client key (PEM) of --etcd-cert")
	fl.IntVar(&f.leaseTTL, "lease-ttl", 0, "seconds a dead leader's lease lasts before a standby takes over (2..300, default 10)")
	fl.StringVar(&f.replicaID, "replica-id", "", "this replica's name in the group (default: host name and API port)")
	fl.StringVar(&f.advertise, "advertise-url", "", "where the other replicas reach this one's control API (default: from --listen)")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the keys, the first admin token, the local socket and uploads (default: --state's directory)")
}

// config is serve's configuration (server.LoadConfig): the file's, a
// flag given on the command line (or a key the file leaves out) taking the
// flag's value.
func (f *serveFlags) config(cmd *cobra.Command) (server.Config, error) {
	var flags []server.Flag
	for _, fl := range []struct{ flag, key, val string }{
		{"state", "state", f.state}, {"plugin-dir", "pluginDir", f.dir}, {"listen", "listen", f.listen},
		{"tls-cert", "tlsCert", f.tlsCert}, {"tls-key", "tlsKey", f.tlsKey}, {"introspection-listen", "introspectionListen", f.introListen},
		{"store", "store", f.store}, {"etcd-prefix", "etcdPrefix", f.etcdPrefix}, {"etcd-ca", "etcdCA", f.etcdCA},
		{"etcd-cert", "etcdCert", f.etcdCert}, {"etcd-key", "etcdKey", f.etcdKey}, {"replica-id", "replicaID", f.replicaID},
		{"advertise-url", "advertiseURL", f.advertise}, {"data-dir", "dataDir", f.dataDir},
		{"firmware-dir", "firmwareDir", f.firmwareDir}, {"firmware-listen", "firmwareListen", f.firmwareListen},
		{"firmware-url", "firmwareURL", f.firmwareURL},
		{"image-dir", "imageDir", f.imageDir}, {"image-cache", "imageCache", f.imageCache},
		{"lease-ttl", "leaseTTL", strconv.Itoa(f.leaseTTL)}} {
		flags = append(flags, server.Flag{Key: fl.key, Value: fl.val, Given: cmd.Flags().Changed(fl.flag)})
	}
	c, err := server.LoadConfig(f.cfgFile, flags...)
	if err != nil {
		return c, usageErr(err)
	}
	return c, nil
}

// serverOptions are what package server logs to and tells the operator
// on.
func (a *app) serverOptions() server.Options {
	return server.Options{Log: a.log, Stderr: a.stderr}
}
