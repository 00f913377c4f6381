package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// config is what the flags say.
type config struct {
	addr                                   string // bind address; "" is all
	httpPort, httpsPort, tcpPort, grpcPort int    // 0: any free port, <0: off
	statePath                              string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probetarget:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then stops every listener and returns nil.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	t, err := start(cfg, stdout, stderr)
	if err != nil {
		return err
	}
	t.logf("probetarget: listening %s", t.listening())
	<-ctx.Done()
	t.close()
	return nil
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("probetarget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "", "address to listen on (default all addresses)")
	fs.IntVar(&c.httpPort, "http", 8080, "HTTP port (0: any free port, negative: off)")
	fs.IntVar(&c.httpsPort, "https", 8443, "HTTPS port, self-signed certificate (0: any free port, negative: off)")
	fs.IntVar(&c.tcpPort, "tcp", 8081, "TCP port (0: any free port, negative: off)")
	fs.IntVar(&c.grpcPort, "grpc", 8082, "gRPC health port (0: any free port, negative: off)")
	fs.StringVar(&c.statePath, "state", "", "state file, read for every request; missing means healthy (see go doc)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() != 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, p := range []int{c.httpPort, c.httpsPort, c.tcpPort, c.grpcPort} {
		if p > 65535 {
			return c, fmt.Errorf("port %d out of range", p)
		}
	}
	return c, nil
}
