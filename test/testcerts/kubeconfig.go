package testcerts

import (
	"fmt"
	"os"
)

// Kubeconfig writes to path a kubeconfig whose current cluster trusts
// caFile (as written: a relative path is relative to the kubeconfig) at
// an address nobody serves, with user, a kubeconfig user in YAML flow
// style such as `{token: abc}`: what tests of the check between the
// client CA and the cluster CA read.
func Kubeconfig(path, caFile, user string) error {
	return os.WriteFile(path, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", certificate-authority: %s}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
users:
- name: u
  user: %s
`, caFile, user), 0o600)
}
