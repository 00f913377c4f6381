// Testsum reads `go test -json` and prints what `go test` would, plus the
// count of top-level tests that passed, failed and were skipped in each
// package; `make test` pipes its end-to-end runs through it and prints the
// table at the end.
//
// Usage:
//
//	go test -json ARGS | go run ./test/testsum -label NAME -results DIR
//	go run ./test/testsum -summary -results DIR -e2e test/e2e,supervise/containerd
//
// Contract:
//   - Reading, it prints each package's closing line (ok, ?) as go test
//     does, and a failed package's full (-v) output; build errors pass
//     through. Every package's full output goes to DIR/logs/NAME/, one
//     file per package, and one row per package to DIR/counts.tsv (run
//     label, package, passed, failed, skipped, status).
//   - It exits 1 when a package failed or never finished (a build failure,
//     a crash, go test killed), so with pipefail the pipeline's status is
//     go test's.
//   - -summary prints the rows of the packages -e2e names (module-relative
//     paths), the totals of every row, and last a line of the exact form
//     "N passed, N failed" (CI reads it). A package that failed with no
//     failed test (TestMain, build, timeout) counts as one failure. It
//     exits 1 when anything failed.
package main
