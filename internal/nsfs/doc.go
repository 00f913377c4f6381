// Package nsfs creates Linux namespaces that outlive any process by
// bind-mounting them onto a file, the way `ip netns add` does. podvisor uses
// such files to hold a pod's network and IPC namespaces without a pause
// process: runc joins them by path, and they survive container restarts and
// podvisor restarts alike. A reboot (or clearing the run dir) removes them.
package nsfs
