package kubetest

import (
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certsv1 "k8s.io/api/certificates/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	certsv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	coordv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/podvisor/podvisor/internal/kube"
)

// Wrap is cs as kube.Interface.
func Wrap(cs kubernetes.Interface) kube.Interface { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) CoreV1() kube.CoreV1 { return core{c.cs.CoreV1()} }
func (c clientset) CoordinationV1() kube.CoordinationV1 {
	return coordination{c.cs.CoordinationV1()}
}
func (c clientset) AuthenticationV1() kube.AuthenticationV1 {
	return authentication{c.cs.AuthenticationV1()}
}
func (c clientset) AuthorizationV1() kube.AuthorizationV1 {
	return authorization{c.cs.AuthorizationV1()}
}
func (c clientset) CertificatesV1() kube.CertificatesV1 {
	return certificates{c.cs.CertificatesV1()}
}

type core struct{ c corev1client.CoreV1Interface }

func (g core) Pods(ns string) kube.StatusClient[*corev1.Pod, *corev1.PodList] { return g.c.Pods(ns) }
func (g core) Nodes() kube.StatusClient[*corev1.Node, *corev1.NodeList]       { return g.c.Nodes() }
func (g core) Events(ns string) kube.Client[*corev1.Event, *corev1.EventList] {
	return g.c.Events(ns)
}

type coordination struct {
	c coordv1client.CoordinationV1Interface
}

func (g coordination) Leases(ns string) kube.Client[*coordv1.Lease, *coordv1.LeaseList] {
	return g.c.Leases(ns)
}

type authentication struct {
	c authnv1client.AuthenticationV1Interface
}

func (g authentication) TokenReviews() kube.Creator[*authnv1.TokenReview] {
	return g.c.TokenReviews()
}

type authorization struct {
	c authzv1client.AuthorizationV1Interface
}

func (g authorization) SubjectAccessReviews() kube.Creator[*authzv1.SubjectAccessReview] {
	return g.c.SubjectAccessReviews()
}

type certificates struct {
	c certsv1client.CertificatesV1Interface
}

func (g certificates) CertificateSigningRequests() kube.StatusClient[*certsv1.CertificateSigningRequest, *certsv1.CertificateSigningRequestList] {
	return g.c.CertificateSigningRequests()
}
