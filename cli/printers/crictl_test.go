package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func psPods() []v1.Pod {
	started := func(d time.Duration) metav1.Time { return ago(d) }
	return []v1.Pod{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default", UID: "5f2c0f4e-7d1a-4a8e-9b1c-2d3e4f5a6b7c"},
			Status: v1.PodStatus{
				InitContainerStatuses: []v1.ContainerStatus{{Name: "setup", ContainerID: "containerd://1111111111111111aaaa", Image: "docker.io/library/busybox:1.36",
					State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: started(3 * time.Hour), ExitCode: 0, Reason: "Completed"}}}},
				ContainerStatuses: []v1.ContainerStatus{
					{Name: "app", ContainerID: "containerd://2222222222222222bbbb", Image: "docker.io/library/nginx:1.27", RestartCount: 2,
						State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started(5 * time.Minute)}}},
					{Name: "waiting", Image: "example.com/never:1", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
					// A start runc refused: never started (containerd's zero time).
					{Name: "refused", ContainerID: "containerd://5555555555555555eeee", Image: "docker.io/library/busybox:1.36", RestartCount: 1,
						State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: metav1.Unix(0, 0), FinishedAt: started(2 * time.Minute), ExitCode: 128, Reason: "StartError"}}},
				},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "etcd-n1", Namespace: "kube-system", UID: "0123456789abcdef"},
			Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
				{Name: "etcd", ContainerID: "containerd://3333333333333333cccc", Image: "sha256:4444444444444444dddd",
					State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started(26 * time.Hour)}}},
			}},
		},
	}
}

func TestPS(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"running", Options{}, `
CONTAINER           IMAGE                          CREATED             STATE               NAME                ATTEMPT             POD ID              POD
2222222222222       docker.io/library/nginx:1.27   5 minutes ago       Running             app                 2                   5f2c0f4e-7d1a       web-n1
3333333333333       4444444444444                  26 hours ago        Running             etcd                0                   0123456789abc       etcd-n1
`},
		{"all, no headers", Options{All: true, NoHeaders: true}, `
5555555555555       docker.io/library/busybox:1.36   2 minutes ago       Exited              refused             1                   5f2c0f4e-7d1a       web-n1
2222222222222       docker.io/library/nginx:1.27     5 minutes ago       Running             app                 2                   5f2c0f4e-7d1a       web-n1
1111111111111       docker.io/library/busybox:1.36   3 hours ago         Exited              setup               0                   5f2c0f4e-7d1a       web-n1
3333333333333       4444444444444                    26 hours ago        Running             etcd                0                   0123456789abc       etcd-n1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := PS(&b, psPods(), tc.o, printNow); err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(tc.want, "\n"); b.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
			}
		})
	}
	if err := PS(new(bytes.Buffer), psPods(), Options{Output: "wide"}, printNow); err == nil {
		t.Error("-o wide accepted")
	}
}

func TestImages(t *testing.T) {
	images := []Image{
		{Name: "docker.io/library/nginx:1.27", Digest: "sha256:0123456789abcdef0123", Size: 72_500_000},
		{Name: "localhost:5000/tools/probe:v2", Digest: "sha256:fedcba9876543210fedc", Size: 999},
		{Name: "docker.io/library/busybox@sha256:aaaa", Digest: "sha256:bbbbbbbbbbbbbbbbbbbb", Size: 4_270_000},
		{Name: "registry.k8s.io/etcd", Digest: "sha256:cccccccccccccccccccc", Size: 1_500_000_000},
	}
	var b bytes.Buffer
	if err := Images(&b, images, Options{}); err != nil {
		t.Fatal(err)
	}
	want := `IMAGE                        TAG                 IMAGE ID            SIZE
docker.io/library/busybox    <none>              bbbbbbbbbbbbb       4.27MB
docker.io/library/nginx      1.27                0123456789abc       72.5MB
localhost:5000/tools/probe   v2                  fedcba9876543       999B
registry.k8s.io/etcd         <none>              ccccccccccccc       1.5GB
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if images[0].Name != "docker.io/library/nginx:1.27" {
		t.Error("Images sorted its input")
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "Less than a second", time.Second: "1 second", 59 * time.Second: "59 seconds",
		90 * time.Second: "About a minute", 59 * time.Minute: "59 minutes", 80 * time.Minute: "About an hour",
		47 * time.Hour: "47 hours", 13 * 24 * time.Hour: "13 days", 50 * 24 * time.Hour: "7 weeks",
		400 * 24 * time.Hour: "13 months", 3 * 365 * 24 * time.Hour: "3 years",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
