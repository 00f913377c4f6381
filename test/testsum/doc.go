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
//   - A skip is counted at any level: a skipped subtest is a case not run
//     as surely as a skipped test. Each skipped test is written to
//     DIR/skipped.tsv (run label, package, test, its last output line).
//   - -summary prints the rows of the packages -e2e names (module-relative
//     paths), the skipped tests, and last a line of the exact form
//     "N passed, N failed, N skipped" (CI reads it): the totals of every
//     row. A package that failed with no failed test (TestMain, build,
//     timeout) counts as one failure; while PODVISOR_E2E_REQUIRED is set
//     (make test sets it: no case of the suite may pass by not running),
//     so does each skip. It exits 1 when anything failed.
package main
