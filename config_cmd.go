package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
)

// configCommand is `podvisor config view`.
func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "show podvisor's own configuration (podvisor config view)",
		Subcommands: []*cli.Command{{
			Name:      "view",
			Usage:     "print the configuration podvisor run would use (--config file, then flags, then defaults) as a file --config accepts",
			ArgsUsage: "[--config FILE] [run flags...]",
			Flags:     append(runFlags(), configFlag()),
			Before:    loadConfig,
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return cli.Exit(fmt.Sprintf("unexpected argument %q: podvisor config view takes flags only", c.Args().First()), 2)
				}
				return writeConfig(c.App.Writer, c, runFlags())
			},
		}},
	}
}

// writeConfig writes the effective value of every configurable flag as a
// configuration file, each key under its flag's usage as a comment.
func writeConfig(w io.Writer, c *cli.Context, flags []cli.Flag) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key, comment string, v *yaml.Node) {
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key, HeadComment: comment}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	add("apiVersion", "", str(configAPIVersion))
	add("kind", "", str(configKind))
	for _, f := range configurables(flags) {
		var v *yaml.Node
		switch f.kind {
		case kindString:
			v = str(c.String(f.name))
		case kindDuration:
			v = str(c.Duration(f.name).String())
		case kindBool:
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(c.Bool(f.name))}
		case kindInt:
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(c.Value(f.name))}
		case kindUint:
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(c.Value(f.name))}
		case kindFloat:
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(c.Float64(f.name), 'g', -1, 64)}
		case kindList:
			v = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, s := range c.StringSlice(f.name) {
				v.Content = append(v.Content, str(s))
			}
		default:
			continue // given as a flag only (configValues says so)
		}
		usage := ""
		if d, ok := f.flag.(cli.DocGenerationFlag); ok {
			usage = d.GetUsage()
		}
		add(f.key, "--"+f.name+": "+usage, v)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return enc.Close()
}
