package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/backoff"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// watchHeaderTimeout bounds the wait for a watch's answer to begin; the
// stream itself may stay quiet as long as nothing changes.
const watchHeaderTimeout = 30 * time.Second

// WatchOptions are what WatchPods and WatchEvents call. List and Change
// are required; an error from either ends the watch with that error.
type WatchOptions[T any] struct {
	// List gets the whole collection: first, and again (relist true)
	// when the watch cannot resume (podvisor restarted, or the version
	// expired).
	List func(items []T, relist bool) error
	// Change gets each change after the list, in order.
	Change func(typ watch.EventType, obj *T) error
	// Notice, when set, is told what happens to the watch, for a person
	// ("lost podvisor ...; reconnecting", "podvisor restarted; listing
	// again").
	Notice func(msg string)
}

// WatchPods lists the pods, then follows their changes as kubectl get
// pods -w does, until ctx ends (then it returns nil). A broken stream is
// resumed from the last version seen; while podvisor does not answer the
// watch waits for it, and a podvisor that restarted, or a version that
// expired, is listed again. Only a first list that fails, or an error of
// o's functions, ends it early.
func (c *Client) WatchPods(ctx context.Context, o WatchOptions[v1.Pod]) error {
	return watchLoop(ctx, c, "/pods", o, func(b []byte) ([]v1.Pod, string, error) {
		var l v1.PodList
		err := json.Unmarshal(b, &l)
		return l.Items, l.ResourceVersion, err
	}, func(p *v1.Pod) string { return p.ResourceVersion })
}

// WatchEvents lists the events, then follows new and updated ones, as
// WatchPods does for pods.
func (c *Client) WatchEvents(ctx context.Context, o WatchOptions[v1.Event]) error {
	return watchLoop(ctx, c, "/events", o, func(b []byte) ([]v1.Event, string, error) {
		var l v1.EventList
		err := json.Unmarshal(b, &l)
		return l.Items, l.ResourceVersion, err
	}, func(e *v1.Event) string { return e.ResourceVersion })
}

// relistError ends a stream that cannot resume: list again.
type relistError struct{ why string }

func (e *relistError) Error() string { return e.why }

func watchLoop[T any](ctx context.Context, c *Client, path string, o WatchOptions[T], decodeList func([]byte) ([]T, string, error), version func(*T) string) error {
	notice := func(format string, args ...any) {
		if o.Notice != nil {
			o.Notice(fmt.Sprintf(format, args...))
		}
	}
	var inst, rv string
	listed, lost := false, false
	b := &backoff.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}
	wait := func(err error) error {
		if !lost {
			notice("lost podvisor (%v); waiting for it", err)
			lost = true
		}
		return backoff.Wait(ctx, b.Next())
	}
	for ctx.Err() == nil {
		if rv == "" {
			resp, err := c.get(ctx, path, nil)
			if err != nil {
				if !listed {
					return err
				}
				if wait(err) != nil {
					return nil
				}
				continue
			}
			body, err := readAnswer(resp, path)
			if err != nil {
				return err
			}
			items, ver, err := decodeList(body)
			if err != nil {
				return fmt.Errorf("decode %s: %w", path, err)
			}
			if ver == "" {
				return fmt.Errorf("list %s: this podvisor gives no resourceVersion to watch from", path)
			}
			if err := o.List(items, listed); err != nil {
				return err
			}
			inst, rv, listed, lost = resp.Header.Get(InstanceHeader), ver, true, false
			b.Reset()
		}
		err := c.watchOnce(ctx, path, rv, inst, func(typ watch.EventType, raw json.RawMessage) error {
			var obj T
			if err := json.Unmarshal(raw, &obj); err != nil {
				return fmt.Errorf("decode watch event: %w", err)
			}
			rv = version(&obj)
			return o.Change(typ, &obj)
		})
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, new(*relistError)):
			notice("%v; listing again", err)
			rv = ""
		case errors.Is(err, ErrUnreachable):
			if wait(err) != nil {
				return nil
			}
		case errors.Is(err, io.EOF):
			notice("the watch stream ended; resuming from version %s", rv)
			lost = false
		case err != nil && (errors.As(err, new(*APIError)) || errors.As(err, new(*watchError))):
			return err
		case err != nil:
			if wait(err) != nil {
				return nil
			}
		}
	}
	return nil
}

// watchError is an error of the watch itself, not of its connection.
type watchError struct{ err error }

func (e *watchError) Error() string { return e.err.Error() }
func (e *watchError) Unwrap() error { return e.err }

// watchOnce streams one watch from version rv, calling change for each
// event. It returns io.EOF when the server ends the stream (podvisor
// stopping), a relistError when the watch cannot resume (an
// answer from another podvisor instance than inst, or a 410 Expired), and
// connection errors as they are.
func (c *Client) watchOnce(ctx context.Context, path, rv, inst string, change func(watch.EventType, json.RawMessage) error) error {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := time.AfterFunc(watchHeaderTimeout, cancel)
	resp, err := c.get(hctx, path, url.Values{"watch": {"true"}, "resourceVersion": {rv}})
	timer.Stop()
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, err := readAnswer(resp, path)
		return err
	}
	if got := resp.Header.Get(InstanceHeader); got != inst {
		return &relistError{"podvisor restarted"}
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   watch.EventType `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || ctx.Err() == nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("watch stream broke: %w", err)
			}
			return io.EOF
		}
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if err := change(ev.Type, ev.Object); err != nil {
				return &watchError{err}
			}
		case watch.Error:
			var st metav1.Status
			json.Unmarshal(ev.Object, &st)
			if st.Code == http.StatusGone {
				return &relistError{fmt.Sprintf("the watch expired (%s)", st.Message)}
			}
			return &watchError{fmt.Errorf("watch %s: %s", path, st.Message)}
		}
	}
}

// readAnswer reads a whole answer, returning a non-200 one as an
// APIError.
func readAnswer(resp *http.Response, path string) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
			return nil, &APIError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
		}
		return nil, &APIError{Code: resp.StatusCode, Message: fmt.Sprintf("get %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))}
	}
	return body, nil
}
