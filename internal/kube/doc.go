// Package kube is podvisor's client of the apiserver: the five API groups
// it speaks (core, coordination, authentication, authorization and
// certificates, all v1), each kind's calls made as client-go's generated
// typed clients make them, over a REST client for its group.
//
// client-go's clientset (k8s.io/client-go/kubernetes) would do the same
// requests, but its scheme registers every group and version of the API
// at package initialisation, which links and touches every type of
// k8s.io/api: most of podvisor's binary and a part of its resident set at
// rest that buys nothing (issue 19). Here the scheme holds the five groups.
//
// The interfaces name what podvisor calls. client-go's typed clients
// satisfy them as they are (test/kubetest wraps a clientset, fake or real, for
// tests), so a test can hand the mirror or the authorizer a fake clientset.
package kube
