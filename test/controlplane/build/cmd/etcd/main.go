// Command etcd is etcd's server (go.etcd.io/etcd/server/v3/etcdmain) as its
// own main, so this module builds it beside the Kubernetes binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
