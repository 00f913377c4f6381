package cli

import (
	"github.com/podvisor/podvisor/daemon"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runOptions are podvisor run's (and config view's) flags: the daemon's
// Config and the file that fills what they do not give.
type runOptions struct {
	config daemon.Config
	file   string
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.config = daemon.Default()
	o.config.AddFlags(fs)
	fs.StringVar(&o.file, daemon.ConfigFlag, "", "configuration file (apiVersion "+daemon.ConfigAPIVersion+", kind "+daemon.ConfigKind+`; "-": stdin): a key per run flag, in camelCase; flags given override it (env PODVISOR_CONFIG)`)
}

// load is the effective configuration: the command line, then the file,
// then the defaults; -v without --log-level sets the log level.
func (o *runOptions) load(cmd *cobra.Command, g *globalOptions) (daemon.Config, error) {
	fs := cmd.Flags()
	if err := fromEnv(fs, []flagEnv{{daemon.ConfigFlag, "PODVISOR_CONFIG"}}); err != nil {
		return daemon.Config{}, err
	}
	if fs.Changed("v") && !fs.Changed("log-level") {
		level := "info"
		if g.verbosity >= debugVerbosity {
			level = "debug"
		}
		if err := fs.Set("log-level", level); err != nil {
			return daemon.Config{}, err
		}
	}
	if err := daemon.Load(&o.config, fs, o.file, cmd.InOrStdin()); err != nil {
		return daemon.Config{}, err
	}
	return o.config, nil
}

// runDaemon is daemon.Run; tests see the Config it is given.
var runDaemon = daemon.Run

func newRunCommand(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "run the supervisor daemon",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.load(cmd, g)
			if err != nil {
				return err
			}
			return runDaemon(cmd.Context(), c)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}
