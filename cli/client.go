package cli

import (
	"github.com/podvisor/podvisor/api"
	"github.com/spf13/pflag"
)

// globalOptions are the flags every verb has: how to reach podvisor (the
// socket, or kubectl's flags for a remote one run with
// --tls-bind-address) and the log verbosity.
type globalOptions struct {
	socket     string
	server     string
	clientCert string
	clientKey  string
	ca         string
	verbosity  int
}

// globalEnv are the global flags' environment variables.
var globalEnv = []flagEnv{
	{"socket", "PODVISOR_SOCKET"},
	{"server", "PODVISOR_SERVER"},
	{"client-certificate", "PODVISOR_CLIENT_CERTIFICATE"},
	{"client-key", "PODVISOR_CLIENT_KEY"},
	{"certificate-authority", "PODVISOR_CERTIFICATE_AUTHORITY"},
}

func (g *globalOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.socket, "socket", api.DefaultSocket, "podvisor's API socket (env PODVISOR_SOCKET)")
	fs.StringVar(&g.server, "server", "", "talk to the remote podvisor at https://HOST:PORT instead of the socket (env PODVISOR_SERVER)")
	fs.StringVar(&g.clientCert, "client-certificate", "", "client certificate (PEM) for --server (env PODVISOR_CLIENT_CERTIFICATE)")
	fs.StringVar(&g.clientKey, "client-key", "", "client certificate's private key (PEM) for --server (env PODVISOR_CLIENT_KEY)")
	fs.StringVar(&g.ca, "certificate-authority", "", "CA certificates (PEM) the --server certificate must chain to (default: the system's; env PODVISOR_CERTIFICATE_AUTHORITY)")
	fs.IntVarP(&g.verbosity, "v", "v", 0, "log verbosity, as kubectl's -v: for podvisor run without --log-level, 4 or more is --log-level debug")
}

func (g *globalOptions) fromEnv(fs *pflag.FlagSet) error { return fromEnv(fs, globalEnv) }

// client is the client of the podvisor a verb talks to: the remote one
// --server names, else the one on --socket.
func (g *globalOptions) client() (*api.Client, error) {
	if g.server != "" {
		client, err := api.NewTLSClient(g.server, g.clientCert, g.clientKey, g.ca)
		if err != nil {
			return nil, usageError{err}
		}
		return client, nil
	}
	return api.NewClient(g.socket), nil
}

// debugVerbosity is the -v from which podvisor run logs at debug level
// (klog's convention: 4 is debug).
const debugVerbosity = 4
