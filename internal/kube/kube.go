package kube

import (
	"context"
	"fmt"
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certsv1 "k8s.io/api/certificates/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

var (
	// Scheme knows the five groups' types and the options of meta/v1.
	Scheme = runtime.NewScheme()
	// Codecs serialise them (JSON, YAML, protobuf).
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec encodes request options as query parameters.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(coordv1.AddToScheme(Scheme))
	utilruntime.Must(authnv1.AddToScheme(Scheme))
	utilruntime.Must(authzv1.AddToScheme(Scheme))
	utilruntime.Must(certsv1.AddToScheme(Scheme))
}

// Client is what podvisor asks of a kind it reads and writes: methods of
// client-go's typed clients, with their signatures.
type Client[T, L any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// StatusClient is Client for a kind with a status subresource.
type StatusClient[T, L any] interface {
	Client[T, L]
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Creator is a kind that is only created: a review, answered in its status.
type Creator[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}

// Interface is the apiserver as podvisor speaks to it; the method names
// are the clientset's, so kubernetes.Interface adapts one to one.
type Interface interface {
	CoreV1() CoreV1
	CoordinationV1() CoordinationV1
	AuthenticationV1() AuthenticationV1
	AuthorizationV1() AuthorizationV1
	CertificatesV1() CertificatesV1
}

// CoreV1 is the core group's kinds podvisor uses.
type CoreV1 interface {
	Pods(namespace string) StatusClient[*corev1.Pod, *corev1.PodList]
	Nodes() StatusClient[*corev1.Node, *corev1.NodeList]
	Events(namespace string) Client[*corev1.Event, *corev1.EventList]
}

// CoordinationV1 holds the node's lease.
type CoordinationV1 interface {
	Leases(namespace string) Client[*coordv1.Lease, *coordv1.LeaseList]
}

// AuthenticationV1 reviews bearer tokens for the TLS port.
type AuthenticationV1 interface {
	TokenReviews() Creator[*authnv1.TokenReview]
}

// AuthorizationV1 reviews requests to the TLS port.
type AuthorizationV1 interface {
	SubjectAccessReviews() Creator[*authzv1.SubjectAccessReview]
}

// CertificatesV1 requests the node's certificates.
type CertificatesV1 interface {
	CertificateSigningRequests() StatusClient[*certsv1.CertificateSigningRequest, *certsv1.CertificateSigningRequestList]
}

// Clientset is Interface over REST: one HTTP client and one rate limiter
// shared by the groups, as client-go's clientset shares them.
type Clientset struct {
	core, coordination, authentication, authorization, certificates rest.Interface
}

// NewForConfig is kubernetes.NewForConfig for the five groups: the
// config's user agent (client-go's default when empty), its QPS and burst
// as one token bucket.
func NewForConfig(c *rest.Config) (*Clientset, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&cfg, hc)
}

// NewForConfigAndClient is NewForConfig with the HTTP client given.
func NewForConfigAndClient(c *rest.Config, hc *http.Client) (*Clientset, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst must be greater than 0 when QPS is set and no rate limiter is")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	group := func(gv schema.GroupVersion) (rest.Interface, error) {
		g := cfg
		g.GroupVersion = &gv
		g.APIPath = "/apis"
		if gv.Group == "" {
			g.APIPath = "/api"
		}
		g.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, Codecs).WithoutConversion()
		if g.UserAgent == "" {
			g.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientForConfigAndClient(&g, hc)
	}
	var cs Clientset
	for _, g := range []struct {
		gv  schema.GroupVersion
		dst *rest.Interface
	}{
		{corev1.SchemeGroupVersion, &cs.core},
		{coordv1.SchemeGroupVersion, &cs.coordination},
		{authnv1.SchemeGroupVersion, &cs.authentication},
		{authzv1.SchemeGroupVersion, &cs.authorization},
		{certsv1.SchemeGroupVersion, &cs.certificates},
	} {
		rc, err := group(g.gv)
		if err != nil {
			return nil, err
		}
		*g.dst = rc
	}
	return &cs, nil
}

func (c *Clientset) CoreV1() CoreV1                     { return coreV1{c.core} }
func (c *Clientset) CoordinationV1() CoordinationV1     { return coordinationV1{c.coordination} }
func (c *Clientset) AuthenticationV1() AuthenticationV1 { return authenticationV1{c.authentication} }
func (c *Clientset) AuthorizationV1() AuthorizationV1   { return authorizationV1{c.authorization} }
func (c *Clientset) CertificatesV1() CertificatesV1     { return certificatesV1{c.certificates} }

type coreV1 struct{ rc rest.Interface }

func (g coreV1) Pods(ns string) StatusClient[*corev1.Pod, *corev1.PodList] {
	return resource[*corev1.Pod, *corev1.PodList]{g.rc, "pods", ns,
		func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} }}
}

func (g coreV1) Nodes() StatusClient[*corev1.Node, *corev1.NodeList] {
	return resource[*corev1.Node, *corev1.NodeList]{g.rc, "nodes", "",
		func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} }}
}

func (g coreV1) Events(ns string) Client[*corev1.Event, *corev1.EventList] {
	return resource[*corev1.Event, *corev1.EventList]{g.rc, "events", ns,
		func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} }}
}

type coordinationV1 struct{ rc rest.Interface }

func (g coordinationV1) Leases(ns string) Client[*coordv1.Lease, *coordv1.LeaseList] {
	return resource[*coordv1.Lease, *coordv1.LeaseList]{g.rc, "leases", ns,
		func() *coordv1.Lease { return &coordv1.Lease{} }, func() *coordv1.LeaseList { return &coordv1.LeaseList{} }}
}

type authenticationV1 struct{ rc rest.Interface }

func (g authenticationV1) TokenReviews() Creator[*authnv1.TokenReview] {
	n := func() *authnv1.TokenReview { return &authnv1.TokenReview{} }
	return creator[*authnv1.TokenReview]{resource[*authnv1.TokenReview, *authnv1.TokenReview]{g.rc, "tokenreviews", "", n, n}}
}

type authorizationV1 struct{ rc rest.Interface }

func (g authorizationV1) SubjectAccessReviews() Creator[*authzv1.SubjectAccessReview] {
	n := func() *authzv1.SubjectAccessReview { return &authzv1.SubjectAccessReview{} }
	return creator[*authzv1.SubjectAccessReview]{resource[*authzv1.SubjectAccessReview, *authzv1.SubjectAccessReview]{g.rc, "subjectaccessreviews", "", n, n}}
}

type certificatesV1 struct{ rc rest.Interface }

func (g certificatesV1) CertificateSigningRequests() StatusClient[*certsv1.CertificateSigningRequest, *certsv1.CertificateSigningRequestList] {
	return resource[*certsv1.CertificateSigningRequest, *certsv1.CertificateSigningRequestList]{g.rc, "certificatesigningrequests", "",
		func() *certsv1.CertificateSigningRequest { return &certsv1.CertificateSigningRequest{} },
		func() *certsv1.CertificateSigningRequestList { return &certsv1.CertificateSigningRequestList{} }}
}
