package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/manifest"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// fieldChecks are the checks of single fields, by flag name: each returns
// why the value is refused. A configuration file's key is checked as it
// is read (its error names the line), and Validate runs them all.
var fieldChecks = map[string]func(c *Config) error{
	"allowed-unsafe-sysctls": checkAllowedUnsafeSysctls,
	"seccomp-profile-root":   checkSeccompProfileRoot,
	"volumes-dir":            checkVolumesDir,
	"pod-pids-limit": func(c *Config) error {
		if c.PodPidsLimit == 0 || c.PodPidsLimit < -1 {
			return fmt.Errorf("%d: must be more than 0, or -1 for none", c.PodPidsLimit)
		}
		return nil
	},
	"node-name": func(c *Config) error {
		name := normalNodeName(c.NodeName)
		if name == "" {
			return nil
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("%q: not a valid node name: %s", c.NodeName, strings.Join(errs, "; "))
		}
		return nil
	},
	"unknown-fields": func(c *Config) error {
		_, err := manifest.ParseUnknownFieldPolicy(c.UnknownFields)
		return err
	},
	"cluster-domain": func(c *Config) error {
		if c.ClusterDomain == "" {
			return nil
		}
		if errs := validation.IsDNS1123Subdomain(c.ClusterDomain); len(errs) > 0 {
			return fmt.Errorf("%q: not a valid DNS domain: %s", c.ClusterDomain, strings.Join(errs, "; "))
		}
		return nil
	},
	"node-ip": func(c *Config) error {
		if c.NodeIP != "" && net.ParseIP(c.NodeIP) == nil {
			return fmt.Errorf("%q is not an IP address", c.NodeIP)
		}
		return nil
	},
	"pod-cidr": func(c *Config) error {
		if _, _, err := net.ParseCIDR(c.PodCIDR); err != nil {
			return fmt.Errorf("%q is not a subnet such as 10.88.0.0/16", c.PodCIDR)
		}
		return nil
	},
	"container-log-max-size": func(c *Config) error {
		_, err := parseLogMaxSize(c.ContainerLogMaxSize)
		return err
	},
	"container-log-max-files": func(c *Config) error {
		if c.ContainerLogMaxFiles < crilog.MinMaxFiles {
			return fmt.Errorf("%d: a log needs at least %d files (the live one and the last rotated), as kubelet requires", c.ContainerLogMaxFiles, crilog.MinMaxFiles)
		}
		return nil
	},
	"container-log-links": func(c *Config) error {
		if c.ContainerLogLinks != "" && !filepath.IsAbs(c.ContainerLogLinks) {
			return fmt.Errorf("%q is not an absolute directory", c.ContainerLogLinks)
		}
		return nil
	},
	"log-level": func(c *Config) error {
		_, err := parseLogLevel(c.LogLevel)
		return err
	},
	"runtime-request-timeout": func(c *Config) error {
		if c.RuntimeRequestTimeout < 0 {
			return fmt.Errorf("%s: must not be negative (0: no bound)", c.RuntimeRequestTimeout)
		}
		return nil
	},
	"relist-period":                func(c *Config) error { return positive(c.RelistPeriod) },
	"image-pull-progress-deadline": func(c *Config) error { return positive(c.ImagePullProgressDeadline) },
	"manifest-relist-period":       func(c *Config) error { return positive(c.ManifestRelistPeriod) },
	"progress-deadline":            func(c *Config) error { return notNegative(c.ProgressDeadline) },
	"cdi-spec-dirs":                checkCDISpecDirs,
	"min-ready":                    func(c *Config) error { return notNegative(c.MinReady) },
}

func positive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s: must be more than 0", d)
	}
	return nil
}

func notNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s: must not be negative (0: off)", d)
	}
	return nil
}

// checkField runs the check of one flag's field, if it has one.
func checkField(flag string, c *Config) error {
	if check := fieldChecks[flag]; check != nil {
		return check(c)
	}
	return nil
}

// Validate checks every value before anything starts, and returns one
// error per bad value, each naming its flag and why.
func (c *Config) Validate() error {
	var errs []error
	for _, f := range configurables(runFlagSet(c)) {
		if err := checkField(f.name, c); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.name, err))
		}
	}
	if len(errs) == 0 {
		// The eviction flags together (a soft threshold's grace period).
		if _, err := c.evictionThresholds(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TLSBindAddress == "" {
		if c.TLSCertFile != "" || c.TLSPrivateKeyFile != "" || c.ClientCAFile != "" {
			errs = append(errs, errors.New("--tls-cert-file, --tls-private-key-file and --client-ca-file need --tls-bind-address"))
		}
	} else if err := c.remoteAPI().Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateAuth()...)
	errs = append(errs, c.validateRuntimeClasses()...)
	if err := c.validateCerts(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return invalidError{errors.Join(errs...)}
}

// invalidError is Validate's error: its message, matching ErrInvalid.
type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }

// parseLogMaxSize reads --container-log-max-size: a number of bytes, or a
// Kubernetes quantity as kubelet's containerLogMaxSize ("10Mi").
func parseLogMaxSize(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		q, qerr := resource.ParseQuantity(s)
		if qerr != nil {
			return 0, fmt.Errorf("%q is neither bytes nor a quantity such as 10Mi", s)
		}
		var ok bool
		if n, ok = q.AsInt64(); !ok {
			return 0, fmt.Errorf("%q is not a whole number of bytes", s)
		}
	}
	if n <= 0 {
		return 0, fmt.Errorf("%q: the size must be positive", s)
	}
	return n, nil
}

// parseLogLevel reads --log-level.
func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}

// logPolicy is the rotation policy of a validated configuration.
func (c *Config) logPolicy() crilog.Policy {
	size, _ := parseLogMaxSize(c.ContainerLogMaxSize)
	return crilog.Policy{MaxSize: size, MaxFiles: c.ContainerLogMaxFiles}
}
