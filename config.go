package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
)

// The configuration file's type, as KubeletConfiguration's.
const (
	configAPIVersion = "podvisor.io/v1alpha1"
	configKind       = "PodvisorConfiguration"
)

// errConfig is what every configuration file error unwraps to.
var errConfig = errors.New("invalid configuration file")

// configError is one problem of a configuration file, as
// "FILE:LINE: KEY: reason".
type configError struct {
	path string
	line int
	key  string
	msg  string
}

func (e *configError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("%s:%d: %s", e.path, e.line, e.msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.path, e.line, e.key, e.msg)
}

func (e *configError) Unwrap() error { return errConfig }

func configFlag() cli.Flag {
	return &cli.StringFlag{Name: "config", Usage: "configuration file (apiVersion " + configAPIVersion + ", kind " + configKind + "): a key per run flag, in camelCase; flags given override it", EnvVars: []string{"PODVISOR_CONFIG"}}
}

// configKey is a flag's key in the file: container-log-max-size is
// containerLogMaxSize; initialisms are upper case after the first word, as
// KubeletConfiguration writes them (node-ip is nodeIP, pod-cidr podCIDR,
// client-ca-file clientCAFile).
func configKey(flag string) string {
	parts := strings.Split(flag, "-")
	for i := 1; i < len(parts); i++ {
		switch {
		case configInitialisms[parts[i]]:
			parts[i] = strings.ToUpper(parts[i])
		case parts[i] != "":
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// configInitialisms are the flag words configKey writes in upper case.
var configInitialisms = map[string]bool{"ip": true, "cidr": true, "ca": true, "cni": true, "api": true, "tls": true, "dns": true}

// valueKind is how a flag's value is written in the file.
type valueKind int

const (
	kindUnsupported valueKind = iota
	kindString
	kindBool
	kindInt
	kindUint
	kindFloat
	kindDuration
	kindList
)

func (k valueKind) String() string {
	return [...]string{"unsupported", "a string", "a boolean (true or false)", "an integer", "a non-negative integer", "a number", "a duration such as 10s or 2m", "a list of strings"}[k]
}

func kindOf(f cli.Flag) valueKind {
	switch f.(type) {
	case *cli.StringFlag, *cli.PathFlag:
		return kindString
	case *cli.BoolFlag:
		return kindBool
	case *cli.IntFlag, *cli.Int64Flag:
		return kindInt
	case *cli.UintFlag, *cli.Uint64Flag:
		return kindUint
	case *cli.Float64Flag:
		return kindFloat
	case *cli.DurationFlag:
		return kindDuration
	case *cli.StringSliceFlag:
		return kindList
	}
	return kindUnsupported
}

// configurable is a run flag the file can set.
type configurable struct {
	name, key string
	kind      valueKind
	flag      cli.Flag
}

// configurables are the run flags by key, in runFlags' order.
func configurables(flags []cli.Flag) []configurable {
	var out []configurable
	for _, f := range flags {
		name := f.Names()[0]
		if name == "config" {
			continue
		}
		out = append(out, configurable{name: name, key: configKey(name), kind: kindOf(f), flag: f})
	}
	return out
}

// setting is one key of a file: the flag it sets and the values to give
// it (a list flag takes one per element).
type setting struct {
	flag   string
	values []string
}

// parseConfig checks a configuration file against the flags and returns
// its settings in the file's order.
func parseConfig(path string, data []byte, flags []cli.Flag) ([]setting, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		line, msg := yamlError(err)
		return nil, &configError{path: path, line: line, msg: "not YAML: " + msg}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &configError{path: path, line: extra.Line, msg: "more than one YAML document"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, &configError{path: path, line: root.Line, msg: "want a mapping with apiVersion: " + configAPIVersion + " and kind: " + configKind}
	}
	byKey := map[string]configurable{}
	for _, c := range configurables(flags) {
		byKey[c.key] = c
	}
	seen := map[string]int{}
	var out []setting
	var apiVersion, kind *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if line, dup := seen[key]; dup {
			return nil, &configError{path: path, line: k.Line, key: key, msg: fmt.Sprintf("given twice (first on line %d)", line)}
		}
		seen[key] = k.Line
		switch key {
		case "apiVersion":
			apiVersion = v
			continue
		case "kind":
			kind = v
			continue
		}
		c, ok := byKey[key]
		if !ok {
			return nil, &configError{path: path, line: k.Line, key: key, msg: "unknown key" + suggestKey(key, byKey)}
		}
		values, err := configValues(c, v)
		if err != nil {
			return nil, &configError{path: path, line: v.Line, key: key, msg: err.Error()}
		}
		out = append(out, setting{flag: c.name, values: values})
	}
	for _, want := range []struct {
		key, value string
		node       *yaml.Node
	}{{"apiVersion", configAPIVersion, apiVersion}, {"kind", configKind, kind}} {
		if want.node == nil {
			return nil, &configError{path: path, line: root.Line, key: want.key, msg: "missing: want " + want.value}
		}
		if want.node.Kind != yaml.ScalarNode || want.node.Value != want.value {
			return nil, &configError{path: path, line: want.node.Line, key: want.key, msg: fmt.Sprintf("%q: want %s", want.node.Value, want.value)}
		}
	}
	return out, nil
}

// configValues checks v against c's kind and returns it as flag values.
func configValues(c configurable, v *yaml.Node) ([]string, error) {
	if c.kind == kindList {
		if v.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("want %s", c.kind)
		}
		var out []string
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode || e.Tag != "!!str" {
				return nil, fmt.Errorf("line %d: want %s", e.Line, c.kind)
			}
			out = append(out, e.Value)
		}
		return out, nil
	}
	if v.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("want %s", c.kind)
	}
	bad := fmt.Errorf("%q: want %s", v.Value, c.kind)
	switch c.kind {
	case kindString:
		if v.Tag != "!!str" {
			return nil, fmt.Errorf("%q: want a string (quote it)", v.Value)
		}
	case kindBool:
		var b bool
		if v.Tag != "!!bool" || v.Decode(&b) != nil {
			return nil, bad
		}
		return []string{strconv.FormatBool(b)}, nil
	case kindInt:
		var n int64
		if v.Tag != "!!int" || v.Decode(&n) != nil {
			return nil, bad
		}
		return []string{strconv.FormatInt(n, 10)}, nil
	case kindUint:
		var n uint64
		if v.Tag != "!!int" || v.Decode(&n) != nil {
			return nil, bad
		}
		return []string{strconv.FormatUint(n, 10)}, nil
	case kindFloat:
		var f float64
		if (v.Tag != "!!float" && v.Tag != "!!int") || v.Decode(&f) != nil {
			return nil, bad
		}
		return []string{strconv.FormatFloat(f, 'g', -1, 64)}, nil
	case kindDuration:
		if v.Tag != "!!str" {
			return nil, bad
		}
		if _, err := time.ParseDuration(v.Value); err != nil {
			return nil, bad
		}
	default:
		return nil, fmt.Errorf("the flag --%s has a type the configuration file cannot hold; give it as a flag", c.name)
	}
	return []string{v.Value}, nil
}

// suggestKey names the key meant by a misspelt or flag-style one.
func suggestKey(key string, byKey map[string]configurable) string {
	if c, ok := byKey[configKey(strings.TrimLeft(key, "-"))]; ok {
		return fmt.Sprintf(" (the flag --%s is %s)", c.name, c.key)
	}
	for k := range byKey {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf(" (did you mean %s?)", k)
		}
	}
	return ""
}

// yamlError splits a yaml error ("yaml: line 3: did not find...") into
// its line and message.
func yamlError(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, err := fmt.Sscanf(msg, "line %d:", &line); err == nil {
		_, msg, _ = strings.Cut(msg, ": ")
	}
	return line, msg
}

// loadConfig is the Before hook of the commands that take --config: it
// gives every flag not set on the command line its value from the file.
func loadConfig(c *cli.Context) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cli.Exit(fmt.Sprintf("--config: %v", err), 2)
	}
	settings, err := parseConfig(path, data, c.Command.Flags)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	for _, s := range settings {
		if c.IsSet(s.flag) {
			continue // the command line wins
		}
		for _, v := range s.values {
			if err := c.Set(s.flag, v); err != nil {
				return cli.Exit(fmt.Sprintf("%s: %s: %v", path, configKey(s.flag), err), 2)
			}
		}
	}
	return nil
}
