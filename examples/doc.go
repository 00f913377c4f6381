// Package examples holds Pod manifests a user can drop into the manifests
// directory. Each runs offline with the busybox image that `make image`
// builds from Debian's busybox-static.
package examples
