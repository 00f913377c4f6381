package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

func main() {
	sock := os.Getenv("PODVISOR_FAKE_SHIM_SOCKET")
	if sock == "" {
		fmt.Fprintln(os.Stderr, "fakeshim: PODVISOR_FAKE_SHIM_SOCKET is not set")
		os.Exit(2)
	}
	if err := os.MkdirAll(filepath.Dir(sock), 0o711); err != nil {
		fmt.Fprintln(os.Stderr, "fakeshim:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeshim:", err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeshim:", err)
			os.Exit(1)
		}
		c.Close()
	}
}
