package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// serveOpts starts Serve with o and waits until it answers; stop cancels
// it and waits for it to return.
func serveOpts(t *testing.T, o Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	o.Log = slog.New(slog.DiscardHandler)
	go func() { done <- Serve(ctx, o) }()
	c := NewClient(o.Socket)
	deadline := time.Now().Add(5 * time.Second)
	for c.Healthz(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return within 10s of cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}

// seen is one thing a watch told its caller.
type seen struct {
	kind string // list, relist, change, notice
	text string
}

func watchPods(t *testing.T, c *Client) <-chan seen {
	out := make(chan seen, 100)
	go c.WatchPods(t.Context(), WatchOptions[v1.Pod]{
		List: func(items []v1.Pod, relist bool) error {
			var names []string
			for _, p := range items {
				names = append(names, p.Name)
			}
			kind := "list"
			if relist {
				kind = "relist"
			}
			out <- seen{kind, strings.Join(names, ",")}
			return nil
		},
		Change: func(typ watch.EventType, p *v1.Pod) error {
			out <- seen{"change", fmt.Sprintf("%s %s %s", typ, p.Name, p.Status.Phase)}
			return nil
		},
		Notice: func(msg string) { out <- seen{"notice", msg} },
	})
	return out
}

// next returns what the watch told next, skipping notices unless kind is
// "notice".
func next(t *testing.T, ch <-chan seen, kind string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case s := <-ch:
			if s.kind == kind {
				return s.text
			}
			if s.kind != "notice" {
				t.Fatalf("got %s %q, want a %s", s.kind, s.text, kind)
			}
		case <-timeout:
			t.Fatalf("no %s within 10s", kind)
		}
	}
}

func phased(name string, phase v1.PodPhase) *v1.Pod {
	p := staticPod("default", name, "node1")
	p.UID = types.UID("uid-" + name)
	p.Status.Phase = phase
	return p
}

// A pod watch lists, then streams each change; through a restart of
// podvisor (a new instance, versions from 0 again) it says so and lists
// again, then streams the new instance's changes.
func TestWatchPodsAcrossRestart(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	st := status.NewStore(nil)
	st.SetPod(phased("web", v1.PodPending))
	stop := serveOpts(t, Options{Socket: sock, Store: st, Watcher: st})

	ch := watchPods(t, NewClient(sock))
	if got := next(t, ch, "list"); got != "web-node1" {
		t.Fatalf("list %q", got)
	}
	st.SetPod(phased("web", v1.PodRunning))
	if got := next(t, ch, "change"); got != "MODIFIED web-node1 Running" {
		t.Errorf("change %q", got)
	}
	st.SetPod(phased("db", v1.PodPending))
	if got := next(t, ch, "change"); got != "ADDED db-node1 Pending" {
		t.Errorf("change %q", got)
	}
	st.DeletePod("uid-db")
	if got := next(t, ch, "change"); got != "DELETED db-node1 Pending" {
		t.Errorf("change %q", got)
	}

	stop()
	old := instance
	instance = "second"
	t.Cleanup(func() { instance = old })
	st2 := status.NewStore(nil)
	st2.SetPod(phased("web", v1.PodRunning))
	st2.SetPod(phased("cache", v1.PodRunning))
	serveOpts(t, Options{Socket: sock, Store: st2, Watcher: st2})
	var notices []string
	for {
		s := <-ch
		if s.kind == "notice" {
			notices = append(notices, s.text)
			continue
		}
		if s.kind != "relist" || s.text != "cache-node1,web-node1" {
			t.Fatalf("after the restart: %s %q (notices %q)", s.kind, s.text, notices)
		}
		break
	}
	if !strings.Contains(strings.Join(notices, "\n"), "podvisor restarted; listing again") {
		t.Errorf("notices %q do not say podvisor restarted", notices)
	}
	st2.SetPod(phased("cache", v1.PodFailed))
	if got := next(t, ch, "change"); got != "MODIFIED cache-node1 Failed" {
		t.Errorf("change after the restart %q", got)
	}
}

// A version the store cannot resume from is answered as the API server
// does: 200, then an ERROR event with a 410 Status; a bad one is a 400.
func TestWatchExpiredAndBadVersion(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	st := status.NewStore(nil)
	serveOpts(t, Options{Socket: sock, Store: st, Watcher: st})
	code, body := rawGet(t, sock, "/pods?watch=true&resourceVersion=99")
	if code != http.StatusOK || !strings.Contains(string(body), `"type":"ERROR"`) || !strings.Contains(string(body), `"code":410`) || !strings.Contains(string(body), `"reason":"Expired"`) {
		t.Errorf("expired: %d %s", code, body)
	}
	code, body = rawGet(t, sock, "/events?watch=true&resourceVersion=x")
	if code != http.StatusBadRequest || !strings.Contains(string(body), `resourceVersion \"x\": not a version`) {
		t.Errorf("bad version: %d %s", code, body)
	}
	code, body = rawGet(t, sock, "/pods")
	if code != http.StatusOK || !strings.Contains(string(body), `"resourceVersion":"0"`) {
		t.Errorf("list: %d %s", code, body)
	}
}

func TestWatchEventsClient(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	st := status.NewStore(nil)
	web := phased("web", v1.PodRunning)
	st.Eventf(web, "", v1.EventTypeNormal, "Started", "one")
	serveOpts(t, Options{Socket: sock, Store: st, Watcher: st})
	out := make(chan string, 10)
	go NewClient(sock).WatchEvents(t.Context(), WatchOptions[v1.Event]{
		List: func(items []v1.Event, _ bool) error {
			out <- fmt.Sprintf("list %d", len(items))
			return nil
		},
		Change: func(typ watch.EventType, e *v1.Event) error {
			out <- fmt.Sprintf("%s %s %d", typ, e.Message, e.Count)
			return nil
		},
	})
	want := []string{"list 1", "ADDED two 1", "MODIFIED one 2"}
	for i, w := range want {
		switch i {
		case 1:
			st.Eventf(web, "", v1.EventTypeWarning, "BackOff", "two")
		case 2:
			st.Eventf(web, "", v1.EventTypeNormal, "Started", "one")
		}
		select {
		case got := <-out:
			if got != w {
				t.Errorf("got %q, want %q", got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %q within 5s", w)
		}
	}
}

// TestListWatchWithAndWithoutWatcher: with a Watcher, lists carry their
// version and the instance header and watches are served; without one,
// lists are unversioned and a watch is refused with 400.
func TestListWatchWithAndWithoutWatcher(t *testing.T) {
	st := status.NewStore(nil)
	for _, tc := range []struct {
		name    string
		opts    Options
		watches bool
	}{
		{"without a watcher", Options{Store: st}, false},
		{"with a watcher", Options{Store: st, Watcher: st}, true},
	} {
		h := newHandler(tc.opts)
		for path, kind := range map[string]string{"/pods": "PodList", "/events": "EventList"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			var list struct {
				Kind     string
				Metadata struct{ ResourceVersion string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || rec.Code != http.StatusOK || list.Kind != kind {
				t.Fatalf("%s: GET %s: %d %s (%v)", tc.name, path, rec.Code, rec.Body, err)
			}
			if versioned := list.Metadata.ResourceVersion != "" && rec.Header().Get(InstanceHeader) != ""; versioned != tc.watches {
				t.Errorf("%s: GET %s: resourceVersion %q, instance %q", tc.name, path, list.Metadata.ResourceVersion, rec.Header().Get(InstanceHeader))
			}
			if !tc.watches {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path+"?watch=true", nil))
				if rec.Code != http.StatusBadRequest {
					t.Errorf("%s: GET %s?watch=true: %d, want 400", tc.name, path, rec.Code)
				}
			}
		}
	}
}
