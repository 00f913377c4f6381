package daemon

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestEvictionFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{nil, ""},
		{[]string{"--eviction-hard", "none"}, ""},
		{[]string{"--eviction-hard", "memory.free<1Gi"}, `--eviction-hard: unsupported eviction signal "memory.free"`},
		{[]string{"--eviction-soft", "memory.available<1Gi"}, "--eviction-soft-grace-period: the soft threshold memory.available needs a grace period"},
		{[]string{"--eviction-soft", "memory.available<1Gi", "--eviction-soft-grace-period", "memory.available=1m"}, ""},
		{[]string{"--eviction-minimum-reclaim", "nodefs.available=lots"}, "--eviction-minimum-reclaim: nodefs.available"},
		{[]string{"--eviction-max-pod-grace-period", "-1"}, "--eviction-max-pod-grace-period: -1: must not be negative"},
		{[]string{"--eviction-monitoring-interval", "0s"}, "--eviction-monitoring-interval: 0s: must be more than 0"},
	} {
		c := Default()
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		c.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := c.Validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
		}
	}
}

func TestEvictionConfigMap(t *testing.T) {
	file := "apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\nevictionHard:\n  memory.available: 200Mi\n  nodefs.available: \"5%\"\nevictionSoft: {}\nevictionMinimumReclaim: \"nodefs.available=1Gi\"\n"
	c := Default()
	if err := ReadConfig("/etc/podvisor.yaml", []byte(file), &c); err != nil {
		t.Fatal(err)
	}
	if c.EvictionHard != "memory.available<200Mi,nodefs.available<5%" || c.EvictionSoft != "none" || c.EvictionMinimumReclaim != "nodefs.available=1Gi" {
		t.Errorf("got hard %q soft %q min %q", c.EvictionHard, c.EvictionSoft, c.EvictionMinimumReclaim)
	}
	bad := "apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\nevictionHard:\n  memory.free: 200Mi\n"
	c = Default()
	err := ReadConfig("/etc/podvisor.yaml", []byte(bad), &c)
	if err == nil || !strings.Contains(err.Error(), `/etc/podvisor.yaml:4: evictionHard: unsupported eviction signal "memory.free"`) {
		t.Errorf("error %v", err)
	}
}
