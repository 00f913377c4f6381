package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Restart asks podvisor to restart the pod's containers now (container ""
// all of them; else that one), their crash back-off reset. name is found
// as Pod finds it. It returns podvisor's message, such as "pod/web-node1
// restarted", once the pod's worker has the request.
func (c *Client) Restart(ctx context.Context, name, container string) (string, error) {
	q := url.Values{}
	if ns, n, ok := strings.Cut(name, "/"); ok {
		q.Set("namespace", ns)
		name = n
	}
	if container != "" {
		q.Set("container", container)
	}
	return c.postStatus(ctx, "/pods/"+url.PathEscape(name)+"/restart", q)
}

// postStatus POSTs to path and returns the message of the metav1.Status
// answered, or the answer as an *APIError.
func (c *Client) postStatus(ctx context.Context, path string, q url.Values) (string, error) {
	u := url.URL{Scheme: c.scheme, Host: c.host, Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("build request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if de := dialFailure(err); de != nil {
			return "", de
		}
		return "", fmt.Errorf("post %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	var st metav1.Status
	decoded := json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != ""
	if resp.StatusCode == http.StatusOK && decoded {
		return st.Message, nil
	}
	if decoded {
		return "", &APIError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
	}
	return "", &APIError{Code: resp.StatusCode, Message: fmt.Sprintf("post %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))}
}
