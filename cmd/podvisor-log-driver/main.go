package main

import (
	"fmt"
	"os"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/podinit"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == podinit.Arg {
		os.Exit(podinit.Run())
	}
	if len(os.Args) != 3 || os.Args[1] != "log-driver" {
		fmt.Fprintln(os.Stderr, "usage: podvisor-log-driver log-driver ARG (started by a containerd shim, not by hand)")
		os.Exit(2)
	}
	if err := crilog.RunDriver(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "podvisor-log-driver:", err)
		os.Exit(1)
	}
}
