package api

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/podvisor/podvisor/status"
)

// Rollout returns the pod's revisions; name is found as Pod finds it.
func (c *Client) Rollout(ctx context.Context, name string) (*status.Rollout, error) {
	q := url.Values{}
	if ns, n, ok := strings.Cut(name, "/"); ok {
		q.Set("namespace", ns)
		name = n
	}
	var ro status.Rollout
	if err := c.getJSON(ctx, "/pods/"+url.PathEscape(name)+"/rollout", q, &ro); err != nil {
		return nil, err
	}
	return &ro, nil
}

// RolloutUndo runs the pod's revision to (0: the one before the running
// one) until its manifest changes; it returns podvisor's message.
func (c *Client) RolloutUndo(ctx context.Context, name string, to int) (string, error) {
	q := url.Values{}
	if ns, n, ok := strings.Cut(name, "/"); ok {
		q.Set("namespace", ns)
		name = n
	}
	if to > 0 {
		q.Set("toRevision", strconv.Itoa(to))
	}
	return c.postStatus(ctx, "/pods/"+url.PathEscape(name)+"/rollout/undo", q)
}
