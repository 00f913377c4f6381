package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// TLSConfig is where ServeTLS listens, the files it authenticates with and
// the filter that authorizes. All are required but ClientTokens, and
// GetCertificate may replace CertFile and KeyFile.
type TLSConfig struct {
	// Address is the TCP address to listen on, HOST:PORT.
	Address string
	// CertFile and KeyFile are the server's certificate (PEM, with any
	// intermediates after it) and its private key.
	CertFile, KeyFile string
	// GetCertificate, when set, is asked for the server's certificate at
	// each handshake in place of CertFile and KeyFile (a certificate
	// issued and rotated through the apiserver); an error refuses the
	// handshake.
	GetCertificate func() (*tls.Certificate, error)
	// ClientCAFile holds the CA certificates (PEM) a client's certificate
	// must chain to.
	ClientCAFile string
	// Filter wraps the whole handler served over TLS (podvisor's API and
	// anything else served there): it authenticates and authorizes each
	// request (auth.Filter.Wrap).
	Filter func(http.Handler) http.Handler
	// LoadClientCA, when set, reads ClientCAFile in place of os.ReadFile,
	// at start and at every reload, and checks it (who may write it, what
	// it holds): an error, which names the file, refuses that content. At start ListenTLS fails
	// with it; later the previous client CA stays in use and the error is
	// logged.
	LoadClientCA func(path string) ([]byte, error)
	// ClientTokens asks for a client certificate without requiring one,
	// for clients that authenticate with a bearer token instead (which
	// Filter checks); without it the handshake requires a certificate.
	ClientTokens bool
}

// Validate reports which field is missing, by its flag's name.
func (t TLSConfig) Validate() error {
	var missing []string
	files := []struct{ v, flag string }{{t.CertFile, "--tls-cert-file"}, {t.KeyFile, "--tls-private-key-file"}, {t.ClientCAFile, "--client-ca-file"}}
	if t.GetCertificate != nil {
		files = files[2:]
	}
	for _, f := range files {
		if f.v == "" {
			missing = append(missing, f.flag)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--tls-bind-address %s needs %s: the remote API authenticates its clients", t.Address, strings.Join(missing, " and "))
	}
	return nil
}

// ListenTLS checks the files and listens on t.Address; Serve on the result
// serves the local API's handler there over HTTPS to clients with a
// certificate from the client CA only (TLS 1.2 or later). The files are
// read again when they change, at the next handshake.
func ListenTLS(ctx context.Context, o Options, t TLSConfig) (*TLSServer, error) {
	if o.Store == nil {
		return nil, errors.New("serve remote API: no Store")
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if t.Filter == nil {
		return nil, fmt.Errorf("--tls-bind-address %s: no authorization filter", t.Address)
	}
	o = o.withDefaults()
	o.remote = true
	files := &tlsFiles{cfg: t, log: o.Log}
	if _, err := files.config(); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", t.Address)
	if err != nil {
		return nil, fmt.Errorf("--tls-bind-address: %w", err)
	}
	base := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c, err := files.config()
			if err != nil {
				o.Log.Error("remote API: refusing a handshake", "err", err)
			}
			return c, err
		},
	}
	return &TLSServer{ln: tls.NewListener(ln, base), o: o, filter: t.Filter}, nil
}

// TLSServer is the remote API's listener, made by ListenTLS.
type TLSServer struct {
	ln     net.Listener
	o      Options
	filter func(http.Handler) http.Handler
}

// Addr is the address the server listens on (the port chosen when the
// address gave 0).
func (s *TLSServer) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx is done, then shuts down as Serve does.
func (s *TLSServer) Serve(ctx context.Context) error {
	log := s.o.Log
	srv := &http.Server{
		// Everything served on the TLS port is behind the filter.
		Handler:           s.filter(newHandler(s.o)),
		ReadHeaderTimeout: 10 * time.Second, // bounds the TLS handshake too
		// A remote client's idle connection is not kept forever.
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	log.Info("serving remote API over TLS", "address", s.ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", s.ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	if err != nil {
		return fmt.Errorf("shut down remote API: %w", err)
	}
	return nil
}

// tlsFiles is the server's tls.Config, rebuilt when a file changed: each
// handshake costs three stats. A file that changed but cannot be used (a
// half-written pair, a client CA LoadClientCA refuses) keeps the last good
// one in use: the error is logged once per version of the file, and the
// next change is tried again.
type tlsFiles struct {
	cfg TLSConfig
	log *slog.Logger

	mu   sync.Mutex
	pair loaded[tls.Certificate]
	ca   loaded[*x509.CertPool]
	tls  *tls.Config
}

// loaded is one part of the configuration, with the stamps of the files
// it was read from, and those of the last version refused.
type loaded[T any] struct {
	v              T
	ok             bool
	stamp, refused [2]fileStamp
}

// fileStamp tells one version of a file from another without reading
// it: a file renamed into place has a new inode (the one it replaces is
// still linked while the new one is written), and one rewritten or
// chmodded in place a new change time.
type fileStamp struct {
	size    int64
	modTime time.Time
	ino     uint64
	ctime   time.Time
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{size: fi.Size(), modTime: fi.ModTime()}
	st.ino, st.ctime = inodeStamp(fi)
	return st, nil
}

// refresh brings l up to date with the files at paths: load is called
// when their stamps changed. It returns whether l changed. Before l was
// ever loaded, an error is returned; after, it is logged and l is kept.
func refresh[T any](f *tlsFiles, l *loaded[T], what string, paths []string, load func() (T, error)) (bool, error) {
	var stamp [2]fileStamp
	var statErr error
	for i, p := range paths {
		st, err := stampOf(p)
		if err != nil {
			statErr = fmt.Errorf("remote API: %w", err)
			break
		}
		stamp[i] = st
	}
	if statErr == nil && l.ok && stamp == l.stamp {
		return false, nil
	}
	if l.ok && statErr == nil && stamp == l.refused {
		return false, nil // refused already, and said so
	}
	err := statErr
	var v T
	if err == nil {
		v, err = load()
	}
	if err != nil {
		if !l.ok {
			return false, err
		}
		if statErr == nil {
			l.refused = stamp
			f.log.Error("remote API: refusing the changed "+what+"; the previous one stays in use", "err", err)
		}
		return false, nil
	}
	l.v, l.ok, l.stamp, l.refused = v, true, stamp, [2]fileStamp{}
	if f.tls != nil {
		f.log.Info("remote API: reloaded the " + what)
	}
	return true, nil
}

func (f *tlsFiles) config() (*tls.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	get := f.cfg.GetCertificate
	changed := false
	if get == nil {
		c, err := refresh(f, &f.pair, "--tls-cert-file and --tls-private-key-file", []string{f.cfg.CertFile, f.cfg.KeyFile}, func() (tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(f.cfg.CertFile, f.cfg.KeyFile)
			if err != nil {
				return cert, fmt.Errorf("--tls-cert-file %s, --tls-private-key-file %s: %w", f.cfg.CertFile, f.cfg.KeyFile, err)
			}
			return cert, nil
		})
		if err != nil {
			return nil, err
		}
		changed = changed || c
	}
	c, err := refresh(f, &f.ca, "--client-ca-file", []string{f.cfg.ClientCAFile}, func() (*x509.CertPool, error) {
		return loadCAsWith(f.cfg.ClientCAFile, "--client-ca-file", f.cfg.LoadClientCA)
	})
	if err != nil {
		return nil, err
	}
	changed = changed || c
	if f.tls != nil && !changed {
		return f.tls, nil
	}
	var certs []tls.Certificate
	var getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	if get != nil {
		getCert = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return get() }
	} else {
		certs = []tls.Certificate{f.pair.v}
	}
	clientAuth := tls.RequireAndVerifyClientCert
	if f.cfg.ClientTokens {
		// A certificate given is still verified against the CA.
		clientAuth = tls.VerifyClientCertIfGiven
	}
	f.tls = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		Certificates:   certs,
		GetCertificate: getCert,
		ClientAuth:     clientAuth,
		ClientCAs:      f.ca.v,
	}
	return f.tls, nil
}

// loadCAs reads a PEM bundle of CA certificates; flag names it in errors.
func loadCAs(path, flag string) (*x509.CertPool, error) {
	return loadCAsWith(path, flag, nil)
}

// loadCAsWith is loadCAs reading with read (os.ReadFile when nil), whose
// errors name the file themselves.
func loadCAsWith(path, flag string, read func(string) ([]byte, error)) (*x509.CertPool, error) {
	var b []byte
	var err error
	if read != nil {
		b, err = read(path)
	} else if b, err = os.ReadFile(path); err != nil {
		err = fmt.Errorf("%s: %w", flag, err)
	}
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s %s: no PEM certificate in it", flag, path)
	}
	return pool, nil
}

// startRemote starts o.Remote's server, if any; done stops it and waits
// for its end. An error serving it later is logged: the local socket keeps
// working.
func startRemote(ctx context.Context, o Options) (done func(), err error) {
	if o.Remote == nil {
		return func() {}, nil
	}
	srv, err := ListenTLS(ctx, o, *o.Remote)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx) }()
	return func() {
		cancel()
		if err := <-errc; err != nil {
			o.Log.Error("remote API", "err", err)
		}
	}, nil
}
