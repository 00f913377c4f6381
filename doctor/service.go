package doctor

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/certs"
	"k8s.io/client-go/rest"
)

// certWarning is how long before its expiry a client certificate is a
// warning.
const certWarning = 7 * 24 * time.Hour

// checkAPIServer, with --kubeconfig, reads the kubeconfig, asks the
// apiserver its version and checks the client certificate's dates.
func checkAPIServer(ctx context.Context, o Options) []Finding {
	const check = "apiserver"
	if o.Kubeconfig == "" {
		return nil
	}
	cfg, err := certs.LoadKubeconfig(o.Kubeconfig)
	if err != nil {
		return []Finding{fail(check, "write --kubeconfig (kubeadm join, or --bootstrap-kubeconfig does it)", "--kubeconfig %s: %v", o.Kubeconfig, err)}
	}
	var out []Finding
	cert, err := certs.ClientCertificate(cfg)
	now := o.Now()
	switch {
	case err != nil:
		out = append(out, fail(check, "renew the node's client certificate (kubeadm certs, or --bootstrap-kubeconfig)", "--kubeconfig %s: client certificate: %v", o.Kubeconfig, err))
	case cert == nil:
		// A token: nothing expires here.
	case now.Before(cert.NotBefore) || !now.Before(cert.NotAfter):
		out = append(out, fail(check, "renew the node's client certificate (kubeadm certs renew, or --bootstrap-kubeconfig); check the clock",
			"--kubeconfig %s: the client certificate is valid from %s to %s only", o.Kubeconfig, cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339)))
	case cert.NotAfter.Sub(now) < certWarning:
		out = append(out, warn(check, "renew it (podvisor does with --rotate-certificates, given an apiserver that signs it)",
			"--kubeconfig %s: the client certificate expires at %s", o.Kubeconfig, cert.NotAfter.UTC().Format(time.RFC3339)))
	default:
		out = append(out, ok(check, "client certificate valid until %s", cert.NotAfter.UTC().Format(time.RFC3339)))
	}
	out = append(out, reachAPIServer(ctx, o, cfg))
	return out
}

func reachAPIServer(ctx context.Context, o Options, cfg *rest.Config) Finding {
	const check = "apiserver"
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fail(check, "correct --kubeconfig "+o.Kubeconfig, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/version", nil)
	if err != nil {
		return fail(check, "correct the server of --kubeconfig "+o.Kubeconfig, "%v", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return warn(check, "check the network to the apiserver and that it runs (podvisor's pods run without it)",
			"apiserver %s unreachable: %v", cfg.Host, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return fail(check, "renew the node's credentials in --kubeconfig "+o.Kubeconfig, "apiserver %s refuses the node's credentials: %s", cfg.Host, resp.Status)
	}
	return ok(check, "apiserver %s answers (%s)", cfg.Host, resp.Status)
}

// checkPodvisor asks podvisor's API socket for its health; podvisor not
// running is a warning: doctor is for a stopped podvisor too.
func checkPodvisor(ctx context.Context, o Options) Finding {
	const check = "podvisor"
	if _, err := os.Stat(o.Socket); errors.Is(err, os.ErrNotExist) {
		return warn(check, "systemctl start podvisor (or podvisor run) if it should be running", "podvisor is not running (no API socket %s)", o.Socket)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c := api.NewClient(o.Socket)
	if err := c.Healthz(ctx); err != nil {
		return warn(check, "see podvisor's log (journalctl -u podvisor); restart it if it hangs", "podvisor does not answer healthz on %s: %v", o.Socket, err)
	}
	v, err := c.Version(ctx)
	if err != nil {
		return ok(check, "podvisor answers on %s", o.Socket)
	}
	return ok(check, "podvisor %s answers on %s", v.Version, o.Socket)
}
