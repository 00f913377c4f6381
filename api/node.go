package api

import (
	"context"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node is GET /node's answer: the local node as podvisor sees it, its
// conditions as the mirrored Node's and the eviction signals behind them.
type Node struct {
	// Name is the node's name.
	Name string `json:"name"`
	// Version is podvisor's (internal/version).
	Version string `json:"version"`
	// StartTime is when this podvisor started.
	StartTime time.Time `json:"startTime"`
	// Conditions are MemoryPressure, DiskPressure, PIDPressure and Ready,
	// as on the mirrored Node.
	Conditions []v1.NodeCondition `json:"conditions"`
	// Signals are the eviction signals as last measured, at Time.
	Time    time.Time    `json:"time"`
	Signals []NodeSignal `json:"signals"`
}

// NodeSignal is one eviction signal: what is available of its capacity
// (bytes, inodes or pids) and its thresholds.
type NodeSignal struct {
	Signal string `json:"signal"`
	// Measured is false when the signal could not be measured.
	Measured  bool   `json:"measured"`
	Available uint64 `json:"available"`
	Capacity  uint64 `json:"capacity"`
	// Thresholds are its thresholds as kubelet writes them
	// ("nodefs.available<10%", soft ones with their grace period).
	Thresholds []string `json:"thresholds,omitempty"`
	// Met is true when one of its thresholds is met now.
	Met bool `json:"met,omitempty"`
}

// NodeSource answers GET /node.
type NodeSource interface {
	Node() Node
}

// registerNode adds GET /node; without a NodeSource it answers 501.
func registerNode(mux *http.ServeMux, o Options) {
	mux.HandleFunc("GET /node", func(w http.ResponseWriter, r *http.Request) {
		if o.Node == nil {
			writeStatus(w, http.StatusNotImplemented, metav1.StatusReasonBadRequest, "", "this podvisor has no node view")
			return
		}
		writeJSON(w, http.StatusOK, o.Node.Node())
	})
}

// Node returns GET /node.
func (c *Client) Node(ctx context.Context) (*Node, error) {
	var n Node
	if err := c.getJSON(ctx, "/node", nil, &n); err != nil {
		return nil, err
	}
	return &n, nil
}
