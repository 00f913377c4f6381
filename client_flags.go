package main

import (
	"github.com/podvisor/podvisor/api"
	"github.com/urfave/cli/v2"
)

// clientFlags are kubectl's flags for reaching a remote podvisor (one run
// with --tls-bind-address). They are global (before the command) and
// each client command takes them too.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Usage: "talk to the remote podvisor at https://HOST:PORT instead of the socket", EnvVars: []string{"PODVISOR_SERVER"}},
		&cli.StringFlag{Name: "client-certificate", Usage: "client certificate (PEM) for --server", EnvVars: []string{"PODVISOR_CLIENT_CERTIFICATE"}},
		&cli.StringFlag{Name: "client-key", Usage: "client certificate's private key (PEM) for --server", EnvVars: []string{"PODVISOR_CLIENT_KEY"}},
		&cli.StringFlag{Name: "certificate-authority", Usage: "CA certificates (PEM) the --server certificate must chain to (default: the system's)", EnvVars: []string{"PODVISOR_CERTIFICATE_AUTHORITY"}},
	}
}

// clientFlag is the value of flag name given to the command or, failing
// that, before it (urfave/cli reads a flag from the innermost command
// that defines it, set or not).
func clientFlag(c *cli.Context, name string) string {
	for _, ctx := range c.Lineage() {
		if ctx.App != nil { // not the bare context the app was run with
			for _, n := range ctx.LocalFlagNames() {
				if n == name {
					return ctx.String(name)
				}
			}
		}
	}
	return c.String(name) // unset everywhere: the environment or ""
}

// newAPIClient is the client of the podvisor a command talks to: the
// remote one --server names, else the one on --socket.
func newAPIClient(c *cli.Context) (*api.Client, error) {
	if server := clientFlag(c, "server"); server != "" {
		client, err := api.NewTLSClient(server, clientFlag(c, "client-certificate"), clientFlag(c, "client-key"), clientFlag(c, "certificate-authority"))
		if err != nil {
			return nil, cli.Exit(err.Error(), 2)
		}
		return client, nil
	}
	return api.NewClient(socketPath(c)), nil
}

// remoteAPI is the remote API podvisor run serves, from its --tls-* flags:
// nil without --tls-bind-address, an error when a file is missing.
func remoteAPI(c *cli.Context) (*api.TLSConfig, error) {
	t := api.TLSConfig{
		Address:      c.String("tls-bind-address"),
		CertFile:     c.String("tls-cert-file"),
		KeyFile:      c.String("tls-private-key-file"),
		ClientCAFile: c.String("client-ca-file"),
	}
	if t.Address == "" {
		if t.CertFile != "" || t.KeyFile != "" || t.ClientCAFile != "" {
			return nil, cli.Exit("--tls-cert-file, --tls-private-key-file and --client-ca-file need --tls-bind-address", 2)
		}
		return nil, nil
	}
	if err := t.Validate(); err != nil {
		return nil, cli.Exit(err.Error(), 2)
	}
	return &t, nil
}
