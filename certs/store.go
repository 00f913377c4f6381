package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/podvisor/podvisor/internal/atomicfile"
)

// errNoPair is a store with no pair to load: the manager falls back to
// its initial pair, or requests one.
var errNoPair = errors.New("no certificate and key")

// fileStore keeps a rotated pair as kubelet's certificate store does
// (client-go's util/certificate FileStore), on the same files: each pair
// issued is <dir>/<prefix>-<yyyy-mm-dd-hh-mm-ss>.pem, the certificate (and
// its intermediates) then the key, and <prefix>-current.pem is a symbolic
// link to the one in use, replaced through <prefix>-updated.pem.
type fileStore struct {
	dir    string
	prefix string
	// certFile and keyFile are a pair loaded when the store has none
	// (the files the kubeconfig names); "" for none.
	certFile, keyFile string
	now               func() time.Time
}

// dateLayout names a pair's file by the local time it was stored, as
// kubelet names it.
const dateLayout = "2006-01-02-15-04-05"

// newFileStore is the store of prefix in dir, first finishing an update
// cut short between its two links (kubelet's recover).
func newFileStore(dir Dir, prefix, certFile, keyFile string) (*fileStore, error) {
	s := &fileStore{dir: string(dir), prefix: prefix, certFile: certFile, keyFile: keyFile, now: time.Now}
	if err := s.recover(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *fileStore) path(qualifier string) string {
	return filepath.Join(s.dir, s.prefix+"-"+qualifier+".pem")
}

// currentPath is <prefix>-current.pem.
func (s *fileStore) currentPath() string { return s.path("current") }

// recover makes <prefix>-updated.pem current when there is no current
// pair: an update stopped between making the new link and renaming it.
func (s *fileStore) recover() error {
	if ok, err := exists(s.currentPath()); err != nil || ok {
		return err
	}
	updated := s.path("updated")
	fi, err := os.Lstat(updated)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&os.ModeSymlink == 0:
		return fmt.Errorf("%s is not a symbolic link", updated)
	}
	if err := os.Rename(updated, s.currentPath()); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.dir)
}

// Current loads the pair in use: <prefix>-current.pem, else certFile and
// keyFile, else <prefix>.crt and <prefix>.key in the dir (kubelet's
// order); errNoPair when none of them is there.
func (s *fileStore) Current() (*tls.Certificate, error) {
	for _, p := range [][2]string{
		{s.currentPath(), s.currentPath()},
		{s.certFile, s.keyFile},
		{filepath.Join(s.dir, s.prefix+".crt"), filepath.Join(s.dir, s.prefix+".key")},
	} {
		if p[0] == "" || p[1] == "" {
			continue
		}
		okCert, err := exists(p[0])
		if err != nil {
			return nil, err
		}
		okKey, err := exists(p[1])
		if err != nil {
			return nil, err
		}
		if okCert && okKey {
			return loadPair(p[0], p[1])
		}
	}
	return nil, fmt.Errorf("%w in %s, %q and %q, or %s.crt and .key", errNoPair, s.currentPath(), s.certFile, s.keyFile, s.prefix)
}

// Update stores certPEM (the certificate first, then any intermediates)
// and keyPEM as a new dated file, links <prefix>-current.pem to it and
// returns the pair. The file is written whole before the link moves, and
// the link is replaced by a rename: a reader sees the old pair or the new
// one, never a part.
func (s *fileStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	var buf bytes.Buffer
	rest := certPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		pem.Encode(&buf, &pem.Block{Type: b.Type, Bytes: b.Bytes})
	}
	if buf.Len() == 0 {
		return nil, errors.New("no PEM certificate")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("no PEM key")
	}
	pem.Encode(&buf, kb)
	pair, err := parsePair(buf.Bytes(), buf.Bytes())
	if err != nil {
		return nil, err
	}

	dated := s.path(s.now().Format(dateLayout))
	if err := atomicfile.Write(dated, buf.Bytes(), 0o600); err != nil {
		return nil, err
	}
	if err := s.link(dated); err != nil {
		return nil, err
	}
	return pair, nil
}

// link points <prefix>-current.pem at target: a new link
// <prefix>-updated.pem renamed over it. A current that is not a link is
// someone else's file, left alone.
func (s *fileStore) link(target string) error {
	current, updated := s.currentPath(), s.path("updated")
	for _, p := range []string{current, updated} {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return err
		case fi.Mode()&os.ModeSymlink == 0:
			return fmt.Errorf("%s is not a symbolic link", p)
		}
	}
	if err := os.Remove(updated); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return err
	}
	if err := os.Symlink(abs, updated); err != nil {
		return err
	}
	if err := os.Rename(updated, current); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.dir)
}

// loadPair reads a certificate and its key (one file for both when the
// paths are the same).
func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM := certPEM
	if keyFile != certFile {
		if keyPEM, err = os.ReadFile(keyFile); err != nil {
			return nil, err
		}
	}
	pair, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	return pair, nil
}

// parsePair is tls.X509KeyPair with its Leaf.
func parsePair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &pair, nil
}

// exists says whether path names something, following links: a dangling
// link is missing.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
