package kube

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// object is a kind's pointer type: what a request body and answer are.
type object interface {
	runtime.Object
	GetName() string
}

// resource is one kind's REST calls, as client-go's generated clients
// make them (k8s.io/client-go/gentype, less server-side apply), in
// protobuf unless the config names another content type. gentype is not
// used because it links client-go's fake machinery (k8s.io/client-go/testing,
// managed fields, structured-merge-diff) into the binary.
type resource[T object, L runtime.Object] struct {
	rc        rest.Interface
	name      string // "pods"
	namespace string // "" for a cluster-scoped kind or every namespace
	newObj    func() T
	newList   func() L
}

func (r resource[T, L]) req(rr *rest.Request) *rest.Request {
	return rr.UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name)
}

func timeout(s *int64) time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(*s) * time.Second
}

func (r resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObj()
	err := r.req(r.rc.Get()).Name(name).VersionedParams(&opts, ParameterCodec).Do(ctx).Into(out)
	return out, err
}

func (r resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.req(r.rc.Get()).VersionedParams(&opts, ParameterCodec).Timeout(timeout(opts.TimeoutSeconds)).Do(ctx).Into(out)
	return out, err
}

func (r resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.req(r.rc.Get()).VersionedParams(&opts, ParameterCodec).Timeout(timeout(opts.TimeoutSeconds)).Watch(ctx)
}

func (r resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObj()
	err := r.req(r.rc.Post()).VersionedParams(&opts, ParameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newObj()
	err := r.req(r.rc.Put()).Name(obj.GetName()).VersionedParams(&opts, ParameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r resource[T, L]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newObj()
	err := r.req(r.rc.Put()).Name(obj.GetName()).SubResource("status").VersionedParams(&opts, ParameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.req(r.rc.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

func (r resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := r.newObj()
	err := r.req(r.rc.Patch(pt)).Name(name).SubResource(subresources...).VersionedParams(&opts, ParameterCodec).Body(data).Do(ctx).Into(out)
	return out, err
}

// creator is a kind that is only created (a review).
type creator[T object] struct{ resource[T, T] }
