package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/trust"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// The configuration file's type, as KubeletConfiguration's.
const (
	ConfigAPIVersion = "podvisor.io/v1alpha1"
	ConfigKind       = "PodvisorConfiguration"
)

// ErrInvalid is what every refused configuration value unwraps to.
var ErrInvalid = errors.New("invalid configuration")

// ErrConfig is what every configuration file error unwraps to (and
// ErrInvalid).
var ErrConfig = fmt.Errorf("%w file", ErrInvalid)

// ConfigError is one problem of a configuration file, as
// "FILE:LINE: KEY: reason".
type ConfigError struct {
	Path string
	Line int
	Key  string
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.Path, e.Line, e.Key, e.Msg)
}

func (e *ConfigError) Unwrap() error { return ErrConfig }

// valueKind is how a flag's value is written in the file.
type valueKind int

const (
	kindUnsupported valueKind = iota
	kindString
	kindBool
	kindInt
	kindDuration
	kindPeriods // shutdownGracePeriodByPodPriority: a list of {priority, shutdownGracePeriodSeconds}
)

func (k valueKind) String() string {
	return [...]string{"unsupported", "a string", "a boolean (true or false)", "an integer", "a duration such as 10s or 2m", "a list of {priority, shutdownGracePeriodSeconds}"}[k]
}

func kindOf(f *pflag.Flag) valueKind {
	switch f.Value.Type() {
	case "string":
		return kindString
	case "bool":
		return kindBool
	case "int", "int64":
		return kindInt
	case "duration":
		return kindDuration
	case "priorityPeriods":
		return kindPeriods
	}
	return kindUnsupported
}

// configurable is a run flag the file can set.
type configurable struct {
	name, key string
	kind      valueKind
	flag      *pflag.Flag
}

// configurables are the run flags of fs (AddFlags' order), by key.
func configurables(fs *pflag.FlagSet) []configurable {
	var out []configurable
	sorted := fs.SortFlags
	fs.SortFlags = false
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == ConfigFlag {
			return
		}
		out = append(out, configurable{name: f.Name, key: ConfigKey(f.Name), kind: kindOf(f), flag: f})
	})
	fs.SortFlags = sorted
	return out
}

// runFlagSet is a flag set of the run flags bound to c, for the file's
// reading and writing.
func runFlagSet(c *Config) *pflag.FlagSet {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SortFlags = false
	c.AddFlags(fs)
	return fs
}

// configSection is a key of the file that no flag mirrors: a structured
// setting with its own reader (its errors name their lines and keys) and
// writer. The command line cannot override it.
type configSection struct {
	key, usage string
	// read checks v and returns what sets it in a Config.
	read  func(path string, v *yaml.Node) (func(*Config), error)
	write func(c *Config) *yaml.Node
}

// configSections are the file's sections, in the order WriteConfig
// writes them (after the flags' keys).
var configSections = []configSection{{
	key:   RuntimeClassesKey,
	usage: runtimeClassesUsage,
	read: func(path string, v *yaml.Node) (func(*Config), error) {
		classes, err := readRuntimeClasses(path, v)
		return func(c *Config) { c.RuntimeClasses = classes }, err
	},
	write: func(c *Config) *yaml.Node { return runtimeClassesNode(c.RuntimeClasses) },
}}

// sectionOf is the section whose key is key, or nil.
func sectionOf(key string) *configSection {
	for i := range configSections {
		if configSections[i].key == key {
			return &configSections[i]
		}
	}
	return nil
}

// Load completes the configuration of `podvisor run` (and `config view`):
// c holds the command line's values, parsed by fs (which AddFlags made);
// the configuration file at path ("-": stdin; "": none) sets every key
// whose flag the command line did not; what no one gave keeps its
// default, --container-log-links the one of the resulting --log-dir.
// Every value is then validated: a bad key of the file is named with its
// line, a bad flag by its name.
func Load(c *Config, fs *pflag.FlagSet, path string, stdin io.Reader) error {
	linksSet := fs.Changed("container-log-links")
	if path != "" {
		name, data, err := readConfigFile(path, stdin)
		if err != nil {
			return err
		}
		fromFile, err := applyConfig(name, data, fs, c)
		if err != nil {
			return err
		}
		linksSet = linksSet || fromFile["container-log-links"]
	}
	if !linksSet {
		c.ContainerLogLinks = DefaultLogLinks(c.LogDir)
	}
	return c.Validate()
}

// maxConfigFile bounds the configuration file read.
const maxConfigFile = 4 << 20

func readConfigFile(path string, stdin io.Reader) (string, []byte, error) {
	if path == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return "", nil, invalidError{fmt.Errorf("--config -: read stdin: %w", err)}
		}
		return "<stdin>", data, nil
	}
	// The file decides what podvisor runs as root: it is read from a
	// descriptor checked as root's (or the reader's own), every directory
	// and link on the way too.
	data, err := trust.ReadTrusted(path, os.Geteuid(), maxConfigFile)
	if err != nil {
		return "", nil, invalidError{fmt.Errorf("--config: %w", err)}
	}
	return path, data, nil
}

// ReadConfig reads a configuration file into c, every key it holds; its
// values are checked as Validate checks them, each error naming the
// file's line.
func ReadConfig(path string, data []byte, c *Config) error {
	_, err := applyConfig(path, data, runFlagSet(c), c)
	return err
}

// applyConfig checks a configuration file and sets each of its keys whose
// flag fs did not parse from the command line; it returns the flags set.
func applyConfig(path string, data []byte, fs *pflag.FlagSet, c *Config) (map[string]bool, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		line, msg := yamlError(err)
		return nil, &ConfigError{Path: path, Line: line, Msg: "not YAML: " + msg}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &ConfigError{Path: path, Line: extra.Line, Msg: "more than one YAML document"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, &ConfigError{Path: path, Line: root.Line, Msg: "want a mapping with apiVersion: " + ConfigAPIVersion + " and kind: " + ConfigKind}
	}
	// The run flags only: fs may hold a command's others (--config,
	// global flags), which are no keys.
	byKey := map[string]configurable{}
	var scratch Config
	for _, c := range configurables(runFlagSet(&scratch)) {
		byKey[c.key] = c
	}
	seen := map[string]int{}
	set := map[string]bool{}
	var apiVersion, kind *yaml.Node
	type pending struct {
		c     configurable
		value string
		line  int
	}
	var values []pending
	var sections []func(*Config) // each sets a section's value
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if line, dup := seen[key]; dup {
			return nil, &ConfigError{Path: path, Line: k.Line, Key: key, Msg: fmt.Sprintf("given twice (first on line %d)", line)}
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
		if s := sectionOf(key); s != nil {
			set, err := s.read(path, v)
			if err != nil {
				return nil, err
			}
			sections = append(sections, set)
			continue
		}
		cf, ok := byKey[key]
		if !ok {
			return nil, &ConfigError{Path: path, Line: k.Line, Key: key, Msg: "unknown key" + suggestKey(key, byKey)}
		}
		value, err := configValue(cf, v)
		if err != nil {
			return nil, &ConfigError{Path: path, Line: v.Line, Key: key, Msg: err.Error()}
		}
		values = append(values, pending{cf, value, v.Line})
	}
	for _, want := range []struct {
		key, value string
		node       *yaml.Node
	}{{"apiVersion", ConfigAPIVersion, apiVersion}, {"kind", ConfigKind, kind}} {
		if want.node == nil {
			return nil, &ConfigError{Path: path, Line: root.Line, Key: want.key, Msg: "missing: want " + want.value}
		}
		if want.node.Kind != yaml.ScalarNode || want.node.Value != want.value {
			return nil, &ConfigError{Path: path, Line: want.node.Line, Key: want.key, Msg: fmt.Sprintf("%q: want %s", want.node.Value, want.value)}
		}
	}
	for _, p := range values {
		if fs.Changed(p.c.name) {
			continue // the command line wins
		}
		if err := fs.Set(p.c.name, p.value); err != nil {
			return nil, &ConfigError{Path: path, Line: p.line, Key: p.c.key, Msg: err.Error()}
		}
		if err := checkField(p.c.name, c); err != nil {
			return nil, &ConfigError{Path: path, Line: p.line, Key: p.c.key, Msg: err.Error()}
		}
		set[p.c.name] = true
	}
	for _, setSection := range sections {
		setSection(c)
	}
	return set, nil
}

// configValue checks v against c's kind and returns it as a flag value.
func configValue(c configurable, v *yaml.Node) (string, error) {
	if c.kind == kindPeriods {
		return periodsValue(v)
	}
	if sep, ok := mapFlags[c.name]; ok && v.Kind == yaml.MappingNode {
		return mapValue(v, sep)
	}
	if listFlags[c.name] && v.Kind == yaml.SequenceNode {
		return listValue(v)
	}
	if v.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("want %s", c.kind)
	}
	bad := fmt.Errorf("%q: want %s", v.Value, c.kind)
	switch c.kind {
	case kindString:
		if v.Tag != "!!str" {
			return "", fmt.Errorf("%q: want a string (quote it)", v.Value)
		}
	case kindBool:
		var b bool
		if v.Tag != "!!bool" || v.Decode(&b) != nil {
			return "", bad
		}
		return strconv.FormatBool(b), nil
	case kindInt:
		var n int64
		if v.Tag != "!!int" || v.Decode(&n) != nil {
			return "", bad
		}
		return strconv.FormatInt(n, 10), nil
	case kindDuration:
		if v.Tag != "!!str" {
			return "", bad
		}
		if _, err := time.ParseDuration(v.Value); err != nil {
			return "", bad
		}
	default:
		return "", fmt.Errorf("the flag --%s has a type the configuration file cannot hold; give it as a flag", c.name)
	}
	return v.Value, nil
}

// suggestKey names the key meant by a misspelt or flag-style one.
func suggestKey(key string, byKey map[string]configurable) string {
	if c, ok := byKey[ConfigKey(strings.TrimLeft(key, "-"))]; ok {
		return fmt.Sprintf(" (the flag --%s is %s)", c.name, c.key)
	}
	for k := range byKey {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf(" (did you mean %s?)", k)
		}
	}
	for _, s := range configSections {
		if strings.EqualFold(s.key, key) {
			return fmt.Sprintf(" (did you mean %s?)", s.key)
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

// WriteConfig writes c as a configuration file Load reads back to c,
// each key under its flag's usage as a comment. Every value is written,
// the effective one: a file without a key would mean that key's default,
// which may differ (--container-log-links follows --log-dir).
func WriteConfig(w io.Writer, c Config) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key, comment string, v *yaml.Node) {
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key, HeadComment: comment}, v)
	}
	scalar := func(tag, s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s} }
	add("apiVersion", "", scalar("!!str", ConfigAPIVersion))
	add("kind", "", scalar("!!str", ConfigKind))
	for _, f := range configurables(runFlagSet(&c)) {
		if f.kind == kindPeriods {
			add(f.key, "--"+f.name+": "+f.flag.Usage, periodsNode(f.flag.Value.String()))
			continue
		}
		tag := map[valueKind]string{kindString: "!!str", kindDuration: "!!str", kindBool: "!!bool", kindInt: "!!int"}[f.kind]
		if tag == "" {
			return fmt.Errorf("--%s: a flag type the configuration file cannot hold", f.name)
		}
		add(f.key, "--"+f.name+": "+f.flag.Usage, scalar(tag, f.flag.Value.String()))
	}
	for _, s := range configSections {
		add(s.key, s.usage, s.write(&c))
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return enc.Close()
}
