// Command fakeshim stands, in tests, for a containerd-shim-runc-v2 that
// serves no task: the one containerd leaves when podvisor is killed while
// a task is created. Run under the name containerd-shim-runc-v2 (argv[0])
// with a real shim's flags, it listens on the unix socket that
// PODVISOR_FAKE_SHIM_SOCKET names, accepts and closes connections, and
// waits to be killed.
//
//	containerd-shim-runc-v2 -namespace NS -id ID -address CONTAINERD_SOCKET
package main
