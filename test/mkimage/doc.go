// Command mkimage writes a busybox image archive for podvisor's demo,
// examples and benchmarks, with no registry:
//
//	go run ./test/mkimage -o examples/images/busybox.tar \
//	    [-ref docker.io/library/busybox:latest] [-format oci|docker] \
//	    [-busybox /bin/busybox] [-file /in/image=host/file ...]
//
// The image is described in package test/testimage; both formats import
// into containerd under -ref with a plain client.Import.
package main
