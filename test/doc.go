// Package test holds the tests of the module's shape as a whole, and under
// it everything test-only: the end-to-end suite (e2e), its environment
// (testenv, prereq), the benchmark (bench), image builders (testimage,
// mkimage), the probe target, certificates, the control plane and the
// go test summariser (testsum). Nothing outside test/ imports it.
//
// Contract:
//   - TestPackageDocs: every package `go list ./...` lists from the module
//     root has a doc.go whose package comment is not empty; a package
//     without one fails the test by name. There are no exceptions.
package test
