// Package testcerts makes throw-away X.509 certificates for tests of the
// remote API: a CA (self-signed or an intermediate, or another CA
// re-issued with its key), server certificates for IP addresses and client
// certificates, each written as PEM files, and a kubeconfig that trusts a
// CA.
//
// Contract:
//   - Keys are ECDSA P-256; certificates are valid from an hour ago for a
//     day.
//   - Nothing here is for production use: keys are written 0600 to the
//     directory the test names.
package testcerts
