package daemon

import (
	"strings"
	"testing"
	"time"
)

func TestParseLogMaxSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  string
	}{
		{"10485760", 10485760, ""},
		{"10Mi", 10 << 20, ""},
		{"500Ki", 500 << 10, ""},
		{"1G", 1e9, ""},
		{"0", 0, "must be positive"},
		{"-1", 0, "must be positive"},
		{"1.5", 0, "not a whole number"},
		{"ten", 0, "neither bytes nor a quantity"},
		{"", 0, "neither bytes nor a quantity"},
	} {
		got, err := parseLogMaxSize(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseLogMaxSize(%q) = %d, %v; want an error saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseLogMaxSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

// TestValidate: each bad value is refused before anything starts, naming
// its flag and why; the defaults pass.
func TestValidate(t *testing.T) {
	if err := func() *Config { c := Default(); return &c }().Validate(); err != nil {
		t.Fatalf("Default() is refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"negative relist", func(c *Config) { c.RelistPeriod = -5 * time.Second }, "--relist-period: -5s: must be more than 0"},
		{"zero relist", func(c *Config) { c.RelistPeriod = 0 }, "--relist-period: 0s: must be more than 0"},
		{"zero manifest relist", func(c *Config) { c.ManifestRelistPeriod = 0 }, "--manifest-relist-period: 0s: must be more than 0"},
		{"node IP", func(c *Config) { c.NodeIP = "999.1.1.1" }, `--node-ip: "999.1.1.1" is not an IP address`},
		{"node name", func(c *Config) { c.NodeName = "Edge_7!" }, `--node-name: "Edge_7!": not a valid node name`},
		{"pod CIDR", func(c *Config) { c.PodCIDR = "10.0.0.0/33" }, `--pod-cidr: "10.0.0.0/33" is not a subnet`},
		{"log size", func(c *Config) { c.ContainerLogMaxSize = "0" }, `--container-log-max-size: "0": the size must be positive`},
		{"log files", func(c *Config) { c.ContainerLogMaxFiles = 1 }, "--container-log-max-files: 1: a log needs at least 2 files"},
		{"log links", func(c *Config) { c.ContainerLogLinks = "rel" }, `--container-log-links: "rel" is not an absolute directory`},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, `--log-level: "loud": want debug`},
		{"unknown fields", func(c *Config) { c.UnknownFields = "ignore" }, "--unknown-fields:"},
		{"timeout", func(c *Config) { c.RuntimeRequestTimeout = -time.Second }, "--runtime-request-timeout: -1s: must not be negative"},
		{"pull deadline", func(c *Config) { c.ImagePullProgressDeadline = 0 }, "--image-pull-progress-deadline: 0s: must be more than 0"},
		{"zero pids limit", func(c *Config) { c.PodPidsLimit = 0 }, "--pod-pids-limit: 0: must be more than 0, or -1 for none"},
		{"bad cluster domain", func(c *Config) { c.ClusterDomain = "Cluster_Local" }, `--cluster-domain: "Cluster_Local": not a valid DNS domain`},
		{"pids limit below -1", func(c *Config) { c.PodPidsLimit = -2 }, "--pod-pids-limit: -2: must be more than 0, or -1 for none"},
		{"tls without address", func(c *Config) { c.TLSCertFile = "/x" }, "need --tls-bind-address"},
	} {
		c := Default()
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
	// Upper case is lowercased first, as the node name always was.
	c := Default()
	c.NodeName = "Edge-7"
	if err := c.Validate(); err != nil {
		t.Errorf("node name Edge-7: %v", err)
	}
}

// The default credentials file falls back to kubelet's; a given one is
// read alone.
func TestCredentialsFiles(t *testing.T) {
	c := Default()
	if got := c.credentialsFiles(); len(got) != 2 || got[0] != DefaultImageCredentialsFile || got[1] != KubeletCredentialsFile {
		t.Errorf("default: %v", got)
	}
	c.ImageCredentialsFile = "/etc/podvisor/auth.json"
	if got := c.credentialsFiles(); len(got) != 1 || got[0] != "/etc/podvisor/auth.json" {
		t.Errorf("given: %v", got)
	}
}
