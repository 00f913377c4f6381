package containerd

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/dialer"
	"github.com/podvisor/podvisor/supervise"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// TestListReadError: adoption's list of podvisor's containers never
// leaves out a container whose record containerd could not give (an
// error other than NotFound): a pod left out would be taken for one that
// is gone, and its sandbox and cgroup removed under its running
// containers. A passing error is tried again (bounded); one that stays
// fails the list.
func TestListReadError(t *testing.T) {
	_, env, c, _ := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.NewContainer(ctx, "adoptee", client.WithNewSpec(), client.WithContainerLabels(map[string]string{supervise.LabelPodUID: "u-list", supervise.LabelSandboxID: "sb-list"})); err != nil {
		t.Fatal(err)
	}
	defer c.ContainerService().Delete(context.WithoutCancel(ctx), "adoptee")
	var failures atomic.Int32 // how many more reads fail
	failReads := func(cctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.Contains(method, ".Containers/") && failures.Add(-1) >= 0 {
			return status.Error(codes.Internal, "injected: metadata store unreadable")
		}
		return invoke(cctx, method, req, reply, cc, opts...)
	}
	failStreams := func(sctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if strings.Contains(method, ".Containers/") && failures.Add(-1) >= 0 {
			return nil, status.Error(codes.Internal, "injected: metadata store unreadable")
		}
		return streamer(sctx, desc, cc, method, opts...)
	}
	fc, err := client.New(env.Address, client.WithDefaultNamespace(env.Namespace), client.WithDialOpts([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer.ContextDialer),
		grpc.WithUnaryInterceptor(failReads),
		grpc.WithStreamInterceptor(failStreams),
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	rt := New(fc, Options{Namespace: env.Namespace})

	failures.Store(1)
	list, err := rt.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "adoptee" || list[0].Labels[supervise.LabelSandboxID] != "sb-list" {
		t.Errorf("List with one read failing = %+v, %v; want the container, read again", list, err)
	}
	failures.Store(1000)
	list, err = rt.List(ctx)
	if err == nil {
		t.Errorf("List with every read failing = %+v, no error; want the error, never a list without the container", list)
	}
}
