package daemon

import (
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
)

// nodeChecks are the checks of a pod against this node's configuration
// and host, for `podvisor validate`: what a valid manifest asks of the
// node that this node lacks, so the pod would wait (or fail) here. Each
// returns warnings as "field: reason", the field a path in the pod
// ("spec.runtimeClassName"). A check reads files but changes nothing.
var nodeChecks = []func(c *Config, pod *v1.Pod) []string{
	runtimeClassWarnings,
	sysctlWarnings,
	seccompWarnings,
	cdiWarnings,
	hostDomainWarnings,
	userNSWarnings,
	claimWarnings,
}

// NodeWarnings returns what pod needs that the node configured by c does
// not give, one "field: reason" each (see nodeChecks).
func NodeWarnings(c *Config, pod *v1.Pod) []string {
	var out []string
	for _, check := range nodeChecks {
		out = append(out, check(c, pod)...)
	}
	return out
}

// NodeConfig is the configuration `podvisor run --config path` would
// start from, the flags aside: the defaults, and the file's keys at path
// ("-": stdin; "": none), read and checked as Load reads them.
func NodeConfig(path string, stdin io.Reader) (Config, error) {
	c := Default()
	if path == "" {
		return c, nil
	}
	name, data, err := readConfigFile(path, stdin)
	if err != nil {
		return c, err
	}
	if err := ReadConfig(name, data, &c); err != nil {
		return c, err
	}
	return c, nil
}

// runtimeClassWarnings: a runtimeClassName the configuration has no class
// of keeps the pod waiting.
func runtimeClassWarnings(c *Config, pod *v1.Pod) []string {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return nil
	}
	if _, ok := c.RuntimeClasses[*name]; ok {
		return nil
	}
	return []string{fmt.Sprintf("spec.runtimeClassName: runtime class %q is not configured on this node (%s.%s): the pod would wait in ContainerCreating with FailedCreatePodSandBox events", *name, RuntimeClassesKey, *name)}
}
