package api

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/podvisor/podvisor/internal/stats"
)

// maxMetricsBody bounds what Metrics reads: far beyond any real scrape.
const maxMetricsBody = 64 << 20

// Stats returns the resource use of every pod's containers (GET /stats).
func (c *Client) Stats(ctx context.Context) (*stats.Summary, error) {
	var s stats.Summary
	if err := c.getJSON(ctx, "/stats", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Metrics returns a scrape of GET /metrics in Prometheus' text format.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	resp, err := c.get(ctx, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		return nil, fmt.Errorf("read /metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &APIError{Code: resp.StatusCode, Message: fmt.Sprintf("get /metrics: %s", resp.Status)}
	}
	return body, nil
}
