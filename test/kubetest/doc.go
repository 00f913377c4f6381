// Package kubetest hands a client-go clientset (a fake one, with its
// tracker and reactors, or a real one) to code that takes kube.Interface.
// Tests only: it links client-go's whole clientset, which podvisor's
// binary does not.
package kubetest
