package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/podvisor/podvisor/test/testimage"
)

// fileFlags collects repeated -file image-path=host-path flags.
type fileFlags map[string]string

func (f fileFlags) String() string { return fmt.Sprint(map[string]string(f)) }

func (f fileFlags) Set(v string) error {
	dst, src, ok := strings.Cut(v, "=")
	if !ok || dst == "" || src == "" {
		return errors.New("want /path/in/image=host/file")
	}
	f[dst] = src
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "archive to write (required)")
	ref := fs.String("ref", "docker.io/library/busybox:latest", "image reference the archive imports as")
	format := fs.String("format", "oci", "archive format: oci (OCI image layout) or docker (docker save)")
	busybox := fs.String("busybox", testimage.DefaultBusyboxPath, "static busybox binary to put in the image")
	files := fileFlags{}
	fs.Var(files, "file", "extra file as /path/in/image=host/file (repeatable; mode kept)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return errors.New("-o is required and no arguments are accepted")
	}
	opts := testimage.Options{Ref: *ref, BusyboxPath: *busybox, ExtraFiles: files}
	build := testimage.Build
	switch *format {
	case "oci":
	case "docker":
		build = testimage.BuildDockerArchive
	default:
		return fmt.Errorf("unknown -format %q (want oci or docker)", *format)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	if err := build(*out, opts); err != nil {
		return fmt.Errorf("build %s: %w", *out, err)
	}
	return nil
}
