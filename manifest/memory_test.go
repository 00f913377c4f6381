package manifest

import (
	"fmt"
	"github.com/podvisor/podvisor/manifest/podfile"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostileFile returns a manifest of at most size bytes: as many documents
// doc(0), doc(1), ... as fit, each followed by "---".
func hostileFile(size int, doc func(i int) string) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		d := doc(i)
		if b.Len()+len(d)+4 > size {
			break
		}
		b.WriteString(d + "---\n")
	}
	return b.String()
}

// flowPod is a pod named web<i> whose args are a flow list of one-letter
// strings, about size bytes: the costliest YAML per byte (a value per two
// bytes).
func flowPod(i, size int) string {
	head := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: web%d}\nspec:\n  containers:\n  - name: app\n    image: busybox\n    args: [", i)
	return head + strings.Repeat("a,", (size-len(head)-4)/2) + "a]\n"
}

// heapWatch samples the heap every millisecond until stopped and reports
// the most it saw in use (garbage not yet collected included, as RSS
// would).
type heapWatch struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func watchHeap() *heapWatch {
	w := &heapWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > w.peak.Load() {
				w.peak.Store(m.HeapInuse)
			}
			select {
			case <-w.stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return w
}

func (w *heapWatch) Stop() uint64 {
	close(w.stop)
	<-w.done
	return w.peak.Load()
}

// heldFromOS is the heap memory the process holds: what RSS counts of it.
func heldFromOS() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapSys - m.HeapReleased
}

// TestHostileFileMemory reads hostile files at the size cap (issue 7: a
// 9.8 MB manifest peaked at 2.0 GB and held 1.8 GB for 20 s): each costs at
// most 200 MiB of heap at its peak, and the heap the process holds is back
// near idle within seconds, without anyone forcing a collection.
func TestHostileFileMemory(t *testing.T) {
	const maxValues = 100_000 // podfile's budget of values per file
	const maxObjects = 5000   // and of objects
	const mib = 1 << 20
	tests := []struct {
		name   string
		data   func() string
		reason string // of the file's first error; "" for a valid file
	}{
		{"one document of 10 MB", func() string { return flowPod(0, MaxFileSize-1) }, "document is larger than 1048576 bytes"},
		{"documents of tiny values", func() string {
			return hostileFile(MaxFileSize, func(i int) string { return flowPod(i, podfile.MaxDocumentSize-100) })
		}, "more than 100000 values"},
		{"containers just under the value budget, then the costliest document", func() string {
			var b strings.Builder
			b.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec:\n  containers:\n")
			for i := range (maxValues - 100) / 5 {
				fmt.Fprintf(&b, "  - {name: c%d, image: b}\n", i)
			}
			b.WriteString("---\n")
			return b.String() + hostileFile(MaxFileSize-b.Len(), func(i int) string { return flowPod(i, podfile.MaxDocumentSize-100) })
		}, "more than 100000 values"},
		{"unknown fields", func() string {
			return hostileFile(MaxFileSize, func(i int) string {
				return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: w%d}\nspec:\n  containers:\n", i) + strings.Repeat("  - {x: 1}\n", (podfile.MaxDocumentSize-200)/11)
			})
		}, "more than 100000 values"},
		{"many small pods", func() string {
			return hostileFile(MaxFileSize, func(i int) string {
				return fmt.Sprintf("{apiVersion: v1, kind: Pod, metadata: {name: w%d}, spec: {containers: [{name: a, image: b}]}}\n", i)
			})
		}, "more than 5000 documents and List items"},
		{"a List of many pods", func() string {
			var b strings.Builder
			b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
			for i := range maxObjects + 1 {
				fmt.Fprintf(&b, "- {apiVersion: v1, kind: Pod, metadata: {name: w%d}, spec: {containers: [{name: a, image: b}]}}\n", i)
			}
			return b.String()
		}, "more than 5000 documents and List items"},
		{"an alias bomb", func() string {
			// Ten levels of a hundred aliases: 10^20 values expanded.
			var b strings.Builder
			b.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: a, image: b}]\nx0: &x0 [" + strings.Repeat("a,", 100) + "a]\n")
			for i := 1; i < 10; i++ {
				fmt.Fprintf(&b, "x%d: &x%d [%s*x%d]\n", i, i, strings.Repeat(fmt.Sprintf("*x%d,", i-1), 100), i-1)
			}
			return b.String()
		}, "excessive aliasing"},
		{"large valid ConfigMaps", func() string {
			return hostileFile(MaxFileSize, func(i int) string {
				return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata:\n  k: %s\n", i, strings.Repeat("x", podfile.MaxDocumentSize-200))
			})
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "hostile.yaml"), tt.data())
			sc := newScanner(dir, node, discard())
			runtime.GC()
			debug.FreeOSMemory()
			idle := heldFromOS()

			w := watchHeap()
			start := time.Now()
			snap, _ := sc.scan(scanRelist)
			took := time.Since(start)
			peak := w.Stop()

			switch {
			case tt.reason == "" && len(snap.Errors) > 0:
				t.Errorf("errors: %s", joinErrs(snap.Errors))
			case tt.reason != "" && (len(snap.Errors) == 0 || !strings.Contains(snap.Errors[0].Reason, tt.reason)):
				t.Errorf("errors: %s\nwant the first containing %q", joinErrs(snap.Errors), tt.reason)
			}
			t.Logf("peak heap %d MiB (idle %d MiB) in %v", peak/mib, idle/mib, took.Round(time.Millisecond))
			if peak > 200*mib {
				t.Errorf("peak heap %d MiB, want at most 200 MiB", peak/mib)
			}

			// Back near idle within seconds, without the test collecting:
			// what the scanner keeps (the ConfigMaps) plus some slack.
			deadline := time.Now().Add(5 * time.Second)
			for heldFromOS() > idle+32*mib && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if held := heldFromOS(); held > idle+32*mib {
				t.Errorf("heap held from the OS %d MiB 5 s after the scan, idle %d MiB", held/mib, idle/mib)
			} else {
				t.Logf("held from the OS after: %d MiB", held/mib)
			}
			runtime.KeepAlive(sc)
		})
	}
}
