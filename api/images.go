package api

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/images"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImageLister lists the images of podvisor's containerd namespace; the
// containerd Runtime is one.
type ImageLister interface {
	// ListImages returns every image the namespace holds.
	ListImages(ctx context.Context) ([]images.Info, error)
}

// Image is one image of GET /images.
type Image struct {
	// Name is the image's reference, such as docker.io/library/busybox:latest.
	Name string `json:"name"`
	// Digest is the digest the name points at (manifest or index).
	Digest string `json:"digest"`
	// ID is the digest of its config, crictl's IMAGE ID; empty when its
	// content is missing.
	ID string `json:"id,omitempty"`
	// Size is its content's size in bytes for this platform, as crictl
	// shows it.
	Size int64 `json:"size"`
	// Pods are the pods ("namespace/name") with a container of this image
	// that exists now (running, or exited and kept), as their status says.
	Pods []string `json:"pods,omitempty"`
}

// ImageList is GET /images's answer, sorted by name.
type ImageList struct {
	Items []Image `json:"items"`
}

// imagesTimeout bounds GET /images's question to containerd.
const imagesTimeout = 10 * time.Second

// registerImages adds GET /images; without an ImageLister it answers 501.
func registerImages(mux *http.ServeMux, o Options) {
	mux.HandleFunc("GET /images", func(w http.ResponseWriter, r *http.Request) {
		if o.Images == nil {
			writeStatus(w, http.StatusNotImplemented, metav1.StatusReasonBadRequest, "", "this podvisor lists no images")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), imagesTimeout)
		defer cancel()
		infos, err := o.Images.ListImages(ctx)
		if err != nil {
			writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "", "list images: "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, imageList(infos, o.Store.Pods()))
	})
}

// imageList makes the answer: each image with the pods using it, found by
// the digest in their containers' imageID ("repo@sha256:…").
func imageList(infos []images.Info, pods []v1.Pod) ImageList {
	users := map[string][]string{} // digest → pods
	for _, p := range pods {
		name := p.Namespace + "/" + p.Name
		for _, css := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
			for _, cs := range css {
				_, digest, ok := strings.Cut(cs.ImageID, "@")
				if ok && cs.ContainerID != "" && !slices.Contains(users[digest], name) {
					users[digest] = append(users[digest], name)
				}
			}
		}
	}
	out := ImageList{Items: make([]Image, 0, len(infos))}
	for _, i := range infos {
		img := Image{Name: i.Name, Digest: i.Digest, ID: i.ID, Size: i.Size}
		img.Pods = slices.Sorted(slices.Values(users[i.Digest]))
		out.Items = append(out.Items, img)
	}
	slices.SortFunc(out.Items, func(a, b Image) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Images returns the images podvisor's containerd namespace holds, sorted
// by name.
func (c *Client) Images(ctx context.Context) (*ImageList, error) {
	var list ImageList
	if err := c.getJSON(ctx, "/images", nil, &list); err != nil {
		return nil, err
	}
	return &list, nil
}
